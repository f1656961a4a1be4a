"""Field errors, name rules and ObjectMeta validation read exactly as kube-apiserver words them."""

from __future__ import annotations

from apimachinery.errors import Cause
from apimachinery.errors import invalid as invalid_error
from apimachinery.validation import (
    Raw,
    duplicate,
    forbidden,
    go_string_map,
    invalid,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    required,
    too_long,
    too_many,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)

LABEL_REGEX_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                   "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                   "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_REGEX_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                       "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def messages(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


# --- field errors -------------------------------------------------------------------------------------------


def test_field_errors_use_kubernetes_reasons_and_bodies() -> None:
    assert required("spec.containers") == Cause("FieldValueRequired", "Required value", "spec.containers")
    assert invalid("metadata.name", "Bad", "oops") == Cause("FieldValueInvalid", 'Invalid value: "Bad": oops',
                                                             "metadata.name")
    assert not_supported("spec.restartPolicy", "Sometimes", ["Always", "OnFailure", "Never"]).message == (
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"')
    assert duplicate("spec.containers[1].name", "web").message == 'Duplicate value: "web"'
    assert forbidden("spec", "not allowed").message == "Forbidden: not allowed"
    assert not_found("spec.containers[0].volumeMounts[0].name", "data").message == 'Not found: "data"'
    assert too_long("metadata.annotations", 262144).message == "Too long: may not be more than 262144 bytes"
    assert too_many("spec.x", 5, 4).message == "Too many: 5: must have at most 4 items"


def test_values_render_like_go() -> None:
    assert invalid("p", 70000, "too big").message == "Invalid value: 70000: too big"
    assert invalid("p", True, "no").message == "Invalid value: true: no"
    assert invalid("p", None, "no").message == "Invalid value: null: no"
    assert invalid("p", Raw("core.Taint{}"), "dup").message == "Invalid value: core.Taint{}: dup"
    assert go_string_map({"b": "2", "a": "1"}) == 'map[string]string{"a":"1", "b":"2"}'


def test_invalid_status_message_matches_kubectl() -> None:
    err = invalid_error("Pod", "x", [required("spec.containers"), invalid("metadata.name", "X", "bad")])
    assert err.message == ('Pod "x" is invalid: '
                           '[spec.containers: Required value, metadata.name: Invalid value: "X": bad]')


# --- names ----------------------------------------------------------------------------------------------------


def test_dns_label_rules() -> None:
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("My_Name") == [LABEL_REGEX_MSG]
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns_subdomain_and_1035_rules() -> None:
    assert is_dns1123_subdomain("web.example.com") == []
    assert is_dns1123_subdomain("-web") == [SUBDOMAIN_REGEX_MSG]
    assert is_dns1123_subdomain("a" * 254)[0] == "must be no more than 253 characters"
    assert is_dns1035_label("1abc")[0].startswith("a DNS-1035 label must consist of lower case alphanumeric "
                                                   "characters or '-', start with an alphabetic character")


def test_generate_name_may_end_with_a_dash() -> None:
    assert name_is_dns_subdomain("web-", True) == []
    assert name_is_dns_subdomain("web-", False) == [SUBDOMAIN_REGEX_MSG]
    assert name_is_dns_label("web-", True) == []


def test_qualified_names_and_label_values() -> None:
    assert is_qualified_name("app.kubernetes.io/name") == []
    assert is_qualified_name("/name") == ["prefix part must be non-empty"]
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of alphanumeric characters")
    assert is_qualified_name("-x") == ["name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                                       "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                                       "or '123-abc', regex used for validation is "
                                       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]
    assert is_valid_label_value("") == []
    assert is_valid_label_value("bad value") != []
    assert is_valid_label_value("v" * 64)[0] == "must be no more than 63 characters"


def test_port_names() -> None:
    assert is_valid_port_name("http") == []
    assert is_valid_port_name("80") == ["must contain at least one letter (a-z)"]
    assert "must not contain consecutive hyphens" in is_valid_port_name("a--b")


def test_labels_errors_name_the_map_path() -> None:
    causes = validate_labels({"app": "bad value!"}, "metadata.labels")
    assert [c.field for c in causes] == ["metadata.labels"]
    assert causes[0].message.startswith('Invalid value: "bad value!": a valid label must be an empty string')


# --- ObjectMeta ----------------------------------------------------------------------------------------------


def test_name_or_generate_name_is_required() -> None:
    causes = validate_object_meta({"namespace": "default"}, True, name_is_dns_subdomain)
    assert messages(causes) == ["metadata.name: Required value: name or generateName is required"]


def test_generate_name_is_checked_with_its_trailing_dash_masked() -> None:
    meta = {"name": "web-x7k2p", "generateName": "web-", "namespace": "default"}
    assert validate_object_meta(meta, True, is_dns1123_label) == []
    bad = {"name": "Web-x7k2p", "generateName": "Web-", "namespace": "default"}
    assert [c.field for c in validate_object_meta(bad, True, is_dns1123_label)] == ["metadata.generateName",
                                                                                    "metadata.name"]


def test_bad_name_and_missing_namespace() -> None:
    causes = validate_object_meta({"name": "Web"}, True, name_is_dns_subdomain)
    assert messages(causes) == [f'metadata.name: Invalid value: "Web": {SUBDOMAIN_REGEX_MSG}',
                                "metadata.namespace: Required value"]


def test_namespace_forbidden_on_cluster_scoped_objects() -> None:
    causes = validate_object_meta({"name": "n1", "namespace": "default"}, False, name_is_dns_subdomain)
    assert messages(causes) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_annotation_total_size_is_limited() -> None:
    meta = {"name": "a", "namespace": "default", "annotations": {"big": "x" * (256 * 1024)}}
    assert messages(validate_object_meta(meta, True, name_is_dns_subdomain)) == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"]


def test_finalizer_names() -> None:
    meta = {"name": "a", "namespace": "default", "finalizers": ["example.com/cleanup", "custom"]}
    causes = validate_object_meta(meta, True, name_is_dns_subdomain)
    assert messages(causes) == ['metadata.finalizers[1]: Invalid value: "custom": name is neither a standard '
                                "finalizer name nor is it fully qualified"]


def test_identity_fields_are_immutable() -> None:
    old = {"name": "a", "namespace": "ns", "uid": "1", "creationTimestamp": "2024-01-02T03:04:05Z", "generation": 2}
    new = {**old, "name": "b", "uid": "2", "creationTimestamp": "2024-01-03T03:04:05Z", "generation": 1}
    assert messages(validate_object_meta_update(new, old)) == [
        "metadata.generation: Invalid value: 1: must not be decremented",
        'metadata.name: Invalid value: "b": field is immutable',
        'metadata.uid: Invalid value: "2": field is immutable',
        "metadata.creationTimestamp: Invalid value: 2024-01-03 03:04:05 +0000 UTC: field is immutable",
    ]


def test_no_new_finalizers_while_deleting() -> None:
    old = {"name": "a", "deletionTimestamp": "2024-01-02T03:04:05Z", "finalizers": ["kubernetes"]}
    new = {**old, "finalizers": ["kubernetes", "example.com/x"]}
    assert messages(validate_object_meta_update(new, old)) == [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new '
        'finalizers []string{"example.com/x"}']


def test_label_selector_requirements() -> None:
    selector = {"matchExpressions": [{"key": "app", "operator": "In"},
                                     {"key": "tier", "operator": "Exists", "values": ["x"]},
                                     {"key": "env", "operator": "Near", "values": ["x"]}]}
    assert messages(validate_label_selector(selector, "spec.selector")) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
        "'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator',
    ]
