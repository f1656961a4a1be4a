"""Structural schemas: what kube-apiextensions-apiserver requires of a v1 CRD's ``openAPIV3Schema`` at creation.

A schema is *structural* when every level names its ``type`` (or is ``x-kubernetes-int-or-string`` /
``x-kubernetes-preserve-unknown-fields``), arrays have ``items``, properties and additionalProperties exclude each
other, the root is an object, and ``metadata`` at the root constrains at most ``name`` and ``generateName``. The
messages are kube's (``validation.go`` and ``schema/validation.go``); each cause's field is the schema's path under
``spec.versions[i].schema.openAPIV3Schema``. ``x-kubernetes-validations`` rules are checked for shape only (a
non-empty ``rule`` string): evaluating CEL belongs to the rule validator (``schemavalidation.RuleValidator``).
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import forbidden, invalid, not_supported, required

from .celrules import compile_error
from .schemavalidation import validate_value

Schema = dict[str, Any]
TYPES = ("array", "boolean", "integer", "number", "object", "string")
LIST_TYPES = ("atomic", "set", "map")
MAP_TYPES = ("granular", "atomic")
RULE_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
UNSUPPORTED = {"id": "id is not supported", "additionalItems": "additionalItems is not supported",
               "patternProperties": "patternProperties is not supported",
               "definitions": "definitions is not supported", "dependencies": "dependencies is not supported",
               "$ref": "$ref is not supported"}


def validate_schema(schema: Any, path: str) -> list[Cause]:
    """Every structural-schema violation of ``schema`` (a version's ``openAPIV3Schema``) at ``path``."""
    if not isinstance(schema, dict):
        return [required(path, "schemas are required")]
    causes: list[Cause] = []
    if schema.get("type") != "object":
        if not schema.get("type"):
            causes.append(required(f"{path}.type", "must not be empty at the root"))
        else:
            causes.append(invalid(f"{path}.type", schema.get("type"), "must be object at the root"))
    causes.extend(_node(schema, path, root=True))
    causes.extend(_metadata(schema.get("properties", {}).get("metadata"), f"{path}.properties[metadata]"))
    if not causes:  # defaults must be valid values of their own schema (kube's "default" validation)
        for at, node in walk_defaults(schema, path):
            causes.extend(validate_value(node["default"], node, f"{at}.default"))
    return causes


def _node(schema: Schema, path: str, root: bool = False, value_validation: bool = False) -> list[Cause]:
    causes: list[Cause] = []
    for key, why in UNSUPPORTED.items():
        if schema.get(key):
            causes.append(forbidden(f"{path}.{key}", why))
    if schema.get("type") == "null":
        causes.append(forbidden(f"{path}.type", "type cannot be set to null"))
    elif schema.get("type") not in (None, *TYPES):
        causes.append(not_supported(f"{path}.type", schema.get("type"), TYPES))
    if schema.get("uniqueItems") is True:
        causes.append(forbidden(f"{path}.uniqueItems",
                                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    if preserve is False:
        causes.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"))
    if not schema.get("type") and not int_or_string and not preserve and not root and not value_validation:
        causes.append(required(f"{path}.type", "must not be empty for specified object fields"))
    if int_or_string and schema.get("type"):
        causes.append(invalid(f"{path}.type", schema["type"], "must be empty to be structural"))
    if schema.get("nullable") and value_validation:
        causes.append(forbidden(f"{path}.nullable", "must be false to be structural"))
    causes.extend(_collections(schema, path, value_validation))
    causes.extend(_extensions(schema, path))
    for keyword in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(keyword) or []):
            if isinstance(sub, dict):
                causes.extend(_value_validation(sub, f"{path}.{keyword}[{i}]"))
    if isinstance(schema.get("not"), dict):
        causes.extend(_value_validation(schema["not"], f"{path}.not"))
    return causes


def _collections(schema: Schema, path: str, value_validation: bool) -> list[Cause]:
    causes: list[Cause] = []
    kind = schema.get("type")
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if additional is not None and properties and (additional is False or isinstance(additional, dict)):
        causes.append(forbidden(f"{path}.additionalProperties",
                                "additionalProperties and properties are mutual exclusive"))
    for name in sorted(properties):
        if isinstance(properties[name], dict):
            causes.extend(_node(properties[name], f"{path}.properties[{name}]", value_validation=value_validation))
    if isinstance(additional, dict):
        causes.extend(_node(additional, f"{path}.additionalProperties", value_validation=value_validation))
    items = schema.get("items")
    if isinstance(items, list):
        causes.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    elif isinstance(items, dict):
        causes.extend(_node(items, f"{path}.items", value_validation=value_validation))
    elif kind == "array" and not value_validation:
        causes.append(required(f"{path}.items", "must be specified"))
    if properties and kind not in (None, "object") and not value_validation:
        causes.append(invalid(f"{path}.type", kind, "must be object if properties are specified"))
    return causes


def _extensions(schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    list_type = schema.get("x-kubernetes-list-type")
    if list_type is not None:
        if list_type not in LIST_TYPES:
            causes.append(not_supported(f"{path}.x-kubernetes-list-type", list_type, LIST_TYPES))
        elif schema.get("type") != "array":
            causes.append(invalid(f"{path}.x-kubernetes-list-type", list_type, "must only be used on type array"))
    keys = schema.get("x-kubernetes-list-map-keys")
    if list_type == "map":
        if not keys:
            causes.append(required(f"{path}.x-kubernetes-list-map-keys",
                                   "must not be empty if x-kubernetes-list-type is map"))
        item_props = (schema.get("items") or {}).get("properties") or {}
        for key in keys or []:
            if key not in item_props:
                causes.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                      "entries must all be names of item properties"))
                break
    elif keys:
        causes.append(invalid(f"{path}.x-kubernetes-list-type", list_type,
                              "must be map if x-kubernetes-list-map-keys is non-empty"))
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None and map_type not in MAP_TYPES:
        causes.append(not_supported(f"{path}.x-kubernetes-map-type", map_type, MAP_TYPES))
    if schema.get("x-kubernetes-embedded-resource") and schema.get("type") != "object":
        causes.append(invalid(f"{path}.type", schema.get("type"),
                              "must be object if x-kubernetes-embedded-resource is true"))
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        at = f"{path}.x-kubernetes-validations[{i}]"
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str) or not rule["rule"].strip():
            causes.append(required(f"{at}.rule", ""))
            continue
        if (why := compile_error(rule["rule"])) is not None:
            causes.append(invalid(f"{at}.rule", rule["rule"], why))
        if rule.get("reason") is not None and rule["reason"] not in RULE_REASONS:
            causes.append(not_supported(f"{at}.reason", rule["reason"], RULE_REASONS))
        message = rule.get("message")
        if isinstance(message, str) and message and not message.strip():
            causes.append(invalid(f"{at}.message", message, "message must be non-empty if specified"))
    return causes


def _value_validation(schema: Schema, path: str) -> list[Cause]:
    """allOf/anyOf/oneOf/not may only validate values: no types, defaults, descriptions or extensions."""
    causes: list[Cause] = []
    for key in ("type", "default", "description", "title", "nullable", "x-kubernetes-int-or-string",
                "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
        if key in schema and schema[key] not in (None, False, ""):
            causes.append(forbidden(f"{path}.{key}", "must be empty to be structural"))
    causes.extend(_node(schema, path, value_validation=True))
    return causes


def _metadata(schema: Any, path: str) -> list[Cause]:
    """Only ``name`` and ``generateName`` of the root's metadata may be specified, as strings."""
    if not isinstance(schema, dict):
        return []
    causes: list[Cause] = []
    if schema.get("type") not in (None, "object"):
        causes.append(invalid(f"{path}.type", schema.get("type"), "must be object"))
    for name in sorted(schema.get("properties") or {}):
        if name not in ("name", "generateName"):
            causes.append(forbidden(f"{path}.properties[{name}]",
                                    "must not specify anything other than name and generateName, but metadata is "
                                    "implicitly specified"))
        elif (schema["properties"][name] or {}).get("type") not in (None, "string"):
            causes.append(invalid(f"{path}.properties[{name}].type", schema["properties"][name].get("type"),
                                  "must be string"))
    return causes


def walk_defaults(schema: Schema, path: str) -> list[tuple[str, Schema]]:
    """(path, schema) of every node that has a ``default`` (their values are checked against their schema)."""
    found: list[tuple[str, Schema]] = []
    if "default" in schema:
        found.append((path, schema))
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            found.extend(walk_defaults(sub, f"{path}.properties[{name}]"))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found.extend(walk_defaults(schema[key], f"{path}.{key}"))
    return found
