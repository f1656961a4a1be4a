"""Structural schemas of CRDs: the creation-time checks, pruning, defaulting and value validation, with kube's
messages and field paths."""

from __future__ import annotations

from typing import Any

from apiserver.apiextensions import pruning, schemavalidation
from apiserver.apiextensions.structural import validate_schema

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["image"], "properties": {
        "image": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
        "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1, "multipleOf": 0.25},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "port": {"x-kubernetes-int-or-string": True},
        "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "nested": {"type": "object", "default": {}, "properties": {"depth": {"type": "integer", "default": 3}}},
        "when": {"type": "string", "format": "date-time"},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True}}}}}


def messages(obj: dict[str, Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in schemavalidation.validate(obj, SCHEMA)]


def test_non_structural_schemas_are_refused_with_kubes_messages() -> None:
    path = "spec.versions[0].schema.openAPIV3Schema"
    assert [c.message for c in validate_schema(None, path)] == ["Required value: schemas are required"]
    causes = validate_schema({"type": "string"}, path)
    assert [(c.field, c.message) for c in causes] == [(f"{path}.type", 'Invalid value: "string": must be object at '
                                                                        "the root")]
    bad = {"type": "object", "properties": {
        "spec": {"properties": {"a": {"type": "string"}}},
        "list": {"type": "array"},
        "both": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        "keyed": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}}}
    found = {(c.field, c.message) for c in validate_schema(bad, path)}
    assert (f"{path}.properties[spec].type", "Required value: must not be empty for specified object fields") in found
    assert (f"{path}.properties[list].items", "Required value: must be specified") in found
    assert (f"{path}.properties[both].additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive") in found
    assert (f"{path}.properties[metadata].properties[labels]",
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly "
            "specified") in found
    assert (f"{path}.properties[keyed].x-kubernetes-list-map-keys",
            "Required value: must not be empty if x-kubernetes-list-type is map") in found
    assert validate_schema(SCHEMA, path) == []
    bad_default = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3, "default": 4}}}
    assert [c.field for c in validate_schema(bad_default, path)] == [f"{path}.properties[n].default"]


def test_values_breaking_the_schema_get_kubes_causes() -> None:
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"},
           "spec": {"image": "TOOLONG", "replicas": 11, "ratio": 1, "color": "pink", "port": True,
                    "tags": ["a", "a", "b"], "labels": {"k": 1}, "when": "yesterday"}}
    assert sorted(messages(obj)) == sorted([
        "spec.image: Too long: may not be more than 5 bytes",
        "spec.image: Invalid value: \"TOOLONG\": spec.image in body should match '^[a-z]+$'",
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
        'spec.color: Unsupported value: "pink": supported values: "red", "blue"',
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        "spec.tags: Too many: 3: must have at most 2 items",
        'spec.tags[1]: Duplicate value: "a"',
        'spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: "integer"',
        'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
    ])
    assert messages({"spec": {"replicas": "3"}}) == [
        "spec.image: Required value",
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"']
    assert messages({"spec": {"image": "ab", "template": {"kind": "Pod"}}}) == [
        "spec.template.apiVersion: Required value: must not be empty"]
    assert messages({"spec": {"image": "ab", "port": "http", "ratio": 0.5, "free": {"any": [1]}}}) == []


def test_a_rule_validator_is_asked_once_the_schema_passes() -> None:
    class Refuse:
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def validate(self, schema: dict[str, Any], obj: Any, old: Any) -> list[Any]:
            self.seen.append((obj["spec"], old))
            return []

    rules = Refuse()
    schemavalidation.validate({"spec": {"image": "ab"}}, SCHEMA, rules, {"spec": {}})
    schemavalidation.validate({"spec": {}}, SCHEMA, rules)  # the schema fails first: rules are not asked
    assert rules.seen == [({"image": "ab"}, {"spec": {}})]


def test_pruning_reports_unknown_fields_and_keeps_what_the_schema_preserves() -> None:
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "extra": 1,
           "spec": {"image": "ab", "foo": "bar", "free": {"anything": {"goes": 1}}, "labels": {"a": "b"},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}}
    assert pruning.prune(obj, SCHEMA) == ["extra", "spec.foo"]
    assert obj["spec"]["free"] == {"anything": {"goes": 1}} and obj["spec"]["labels"] == {"a": "b"}
    assert obj["spec"]["template"]["metadata"] == {"name": "p"} and obj["metadata"] == {"name": "a"}


def test_defaulting_fills_absent_fields_top_down_and_drops_nulls() -> None:
    obj: dict[str, Any] = {"spec": {"image": "ab", "color": None, "replicas": None}}
    assert pruning.prune(obj, SCHEMA) == []  # a null is no value: dropped, unless a default takes its place
    pruning.default(obj, SCHEMA)
    assert obj["spec"] == {"image": "ab", "replicas": 1, "nested": {"depth": 3}}
    kept = {"spec": {"replicas": 4, "nested": {"depth": 0}}}
    pruning.default(kept, SCHEMA)
    assert kept["spec"] == {"replicas": 4, "nested": {"depth": 0}}
