"""Secrets: stringData merged into data, ValidateSecret / ValidateSecretUpdate, the table, base64 decoding."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimachinery import errors
from apimachinery.errors import Cause
from apiserver.openapi.documents import swagger
from apiserver.registry.decoder import Decoder, base64_error_offset
from apiserver.registry.secrets import SecretStrategy

SECRET = SecretStrategy()


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def messages(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def secret(kind: str | None = None, data: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "s", "namespace": "default"}, "data": data or {}, **fields}
    if kind is not None:
        obj["type"] = kind
    return obj


def created(obj: dict[str, Any]) -> dict[str, Any]:
    SECRET.prepare_for_create(obj)
    return obj


# --- defaults and stringData -------------------------------------------------------------------------------------


def test_type_defaults_to_opaque_and_string_data_is_merged() -> None:
    obj = created(secret(data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": "ünï"}))
    assert obj["type"] == "Opaque"
    assert "stringData" not in obj
    assert obj["data"] == {"a": b64("new"), "b": b64("kept"), "c": b64("ünï")}
    assert SECRET.validate(obj) == []


def test_update_merges_string_data_and_keeps_an_omitted_type() -> None:
    old = created(secret("kubernetes.io/tls", {"tls.crt": b64("c"), "tls.key": b64("k")}))
    new = {"metadata": {"name": "s"}, "data": dict(old["data"]), "stringData": {"tls.key": "rotated"}}
    SECRET.prepare_for_update(new, old)
    assert new["type"] == "kubernetes.io/tls" and "stringData" not in new
    assert new["data"]["tls.key"] == b64("rotated")
    assert SECRET.validate_update(new, old) == []


# --- ValidateSecret ----------------------------------------------------------------------------------------------


def test_keys_must_be_config_keys() -> None:
    assert messages(SECRET.validate(created(secret(data={"ok.key-1_": "", "bad key": ""})))) == [
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '
        "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')",
    ]


def test_size_limit_counts_decoded_bytes() -> None:
    limit = 1024 * 1024
    at_limit = created(secret(data={"blob": b64(b"x" * limit)}))  # its base64 is 4/3 larger: still allowed
    assert SECRET.validate(at_limit) == []
    over = created(secret(data={"blob": b64(b"x" * (limit - 1)), "more": b64("xy")}))
    assert messages(SECRET.validate(over)) == ["data: Too long: may not be more than 1048576 bytes"]


@pytest.mark.parametrize("kind,data,annotations,expected", [
    ("kubernetes.io/service-account-token", {}, {},
     ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]),
    ("kubernetes.io/service-account-token", {}, {"kubernetes.io/service-account.name": "default"}, []),
    ("kubernetes.io/dockercfg", {}, {}, ["data[.dockercfg]: Required value"]),
    ("kubernetes.io/dockercfg", {".dockercfg": b64('{"registry": {}}')}, {}, []),
    ("kubernetes.io/dockerconfigjson", {}, {}, ["data[.dockerconfigjson]: Required value"]),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64('{"auths": {}}')}, {}, []),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64("{nope")}, {},
     ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character \'n\' looking for '
      "beginning of object key string"]),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64("")}, {},
     ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input']),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64("[]")}, {},
     ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into '
      "Go value of type map[string]interface {}"]),
    ("kubernetes.io/basic-auth", {}, {}, ["data[username]: Required value", "data[password]: Required value"]),
    ("kubernetes.io/basic-auth", {"password": ""}, {}, []),
    ("kubernetes.io/ssh-auth", {"ssh-privatekey": ""}, {}, ["data[ssh-privatekey]: Required value"]),
    ("kubernetes.io/ssh-auth", {"ssh-privatekey": b64("KEY")}, {}, []),
    ("kubernetes.io/tls", {"tls.key": b64("k")}, {}, ["data[tls.crt]: Required value"]),
    ("kubernetes.io/tls", {}, {}, ["data[tls.crt]: Required value", "data[tls.key]: Required value"]),
    ("example.com/anything", {}, {}, []),
])
def test_type_specific_requirements(kind: str, data: dict[str, str], annotations: dict[str, str],
                                    expected: list[str]) -> None:
    obj = created(secret(kind, data))
    obj["metadata"]["annotations"] = annotations
    assert messages(SECRET.validate(obj)) == expected


# --- ValidateSecretUpdate ----------------------------------------------------------------------------------------


def test_type_is_immutable() -> None:
    old = created(secret(data={"a": b64("1")}))
    new = secret("kubernetes.io/basic-auth", {"username": b64("u")})
    SECRET.prepare_for_update(new, old)
    assert messages(SECRET.validate_update(new, old)) == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable']


def test_immutable_secret_keeps_data_and_immutable() -> None:
    old = created(secret(data={"a": b64("1")}, immutable=True))
    same = secret(data={"a": b64("1")}, immutable=True)
    same["metadata"]["labels"] = {"metadata": "may-change"}
    SECRET.prepare_for_update(same, old)
    assert SECRET.validate_update(same, old) == []
    new = secret(stringData={"a": "2"})
    SECRET.prepare_for_update(new, old)
    assert messages(SECRET.validate_update(new, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


# --- fields and table --------------------------------------------------------------------------------------------


def test_table_and_fields() -> None:
    stamp = (datetime.now(UTC) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = created(secret("kubernetes.io/tls", {"tls.crt": "", "tls.key": ""}))
    obj["metadata"]["creationTimestamp"] = stamp
    assert [c.name for c in SECRET.columns()] == ["Name", "Type", "Data", "Age"]
    assert SECRET.row(obj) == ["s", "kubernetes.io/tls", 2, "3h"]
    assert SECRET.selectable_fields(obj)["type"] == "kubernetes.io/tls"
    assert "type" in SECRET.field_labels()
    assert SECRET.short_names == () and not SECRET.bumps_generation


# --- data must be base64 (the generic decoder, as Go's encoding/json reads a []byte) ------------------------------


@pytest.mark.parametrize("text,offset", [
    ("", None), ("YQ==", None), ("YWI=", None), ("YWJj", None), ("YWJj\nZGVm", None),
    ("YQ", 0), ("YWJjZA", 4), ("!!!!", 0), ("YWJj!", 4), ("YQ=", 3), ("Y===", 1), ("YQ==YQ==", 4),
])
def test_base64_error_offset_is_gos(text: str, offset: int | None) -> None:
    assert base64_error_offset(text) == offset


def test_decoder_refuses_bad_base64_and_canonicalises_good() -> None:
    decoder = Decoder(swagger()["definitions"])
    obj = {"metadata": {"name": "s"}, "data": {"a": "YWJj\nZGVm"}, "stringData": {"b": "plain text"}}
    decoder.decode(obj, "", "v1", "Secret")
    assert obj["data"] == {"a": "YWJjZGVm"} and obj["stringData"] == {"b": "plain text"}
    with pytest.raises(errors.BadRequest) as err:
        decoder.decode({"metadata": {"name": "s"}, "data": {"a": "not base64"}}, "", "v1", "Secret")
    assert str(err.value) == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
                              "byte 3")
    with pytest.raises(errors.BadRequest, match=r"Go struct field Secret.data of type \[\]uint8"):
        decoder.decode({"metadata": {"name": "s"}, "data": {"a": 1}}, "", "v1", "Secret")


def test_docker_config_json_round_trip() -> None:
    config = json.dumps({"auths": {"r.example": {"auth": b64("u:p")}}})
    obj = created(secret("kubernetes.io/dockerconfigjson", stringData={".dockerconfigjson": config}))
    assert SECRET.validate(obj) == [] and base64.b64decode(obj["data"][".dockerconfigjson"]).decode() == config
