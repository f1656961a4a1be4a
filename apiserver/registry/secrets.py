"""Secrets (core/v1): ``stringData`` merged into ``data``, the per-type required keys, the size limit, ``immutable``.

What kube-apiserver does, and where it does it:

* decoding (the v1 → internal conversion) merges ``stringData`` into ``data``, overwriting, and drops it, on
  every write, so ``stringData`` is never stored or returned — here ``prepare_for_create``/``prepare_for_update``;
* a ``data`` value that is not base64 fails decoding (400) — the generic decoder does that for every ``format:
  byte`` field (``decoder.base64_error_offset``);
* defaulting sets ``type: Opaque``; ``ValidateSecret`` checks keys, the 1 MiB total of the decoded values and the
  keys each well-known type requires; ``ValidateSecretUpdate`` keeps ``type`` and an ``immutable`` Secret's data.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from apimachinery.errors import Cause
from apimachinery.patch import go_json_kind
from apimachinery.validation import invalid, required, too_long, validate_immutable
from apiserver.registry.configmaps import MAX_CONFIG_MAP_SIZE, key_causes, validate_immutable_data
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

MAX_SECRET_SIZE = MAX_CONFIG_MAP_SIZE  # core.MaxSecretSize: 1 MiB of decoded bytes
OPAQUE = "Opaque"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
DOCKERCFG = "kubernetes.io/dockercfg"
DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
BASIC_AUTH = "kubernetes.io/basic-auth"
SSH_AUTH = "kubernetes.io/ssh-auth"
TLS = "kubernetes.io/tls"
# The one data key each Docker config type requires, whose value must be a JSON object.
DOCKER_KEYS = {DOCKERCFG: ".dockercfg", DOCKER_CONFIG_JSON: ".dockerconfigjson"}
REDACTED = "<secret contents redacted>"

# How Go's encoding/json describes what Python's json module reports (``SyntaxError`` messages).
_GO_JSON_CONTEXT = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Expecting ',' delimiter": "after object key:value pair",
    "Extra data": "after top-level value",
}


def decode_data(value: str) -> bytes:
    """One ``data`` value as the bytes it stands for (invalid base64, which the decoder refuses: as written)."""
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return value.encode()


def merge_string_data(obj: Object) -> None:
    """Fold ``stringData`` into ``data`` (base64), overwriting; ``stringData`` itself is never kept."""
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def go_json_object_error(raw: bytes) -> str | None:
    """What Go's ``json.Unmarshal`` into ``map[string]interface{}`` says about ``raw`` (None when it parses)."""
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        return "invalid character in string literal"
    except json.JSONDecodeError as err:
        if err.pos >= len(err.doc.rstrip()):
            return "unexpected end of JSON input"
        char = err.doc[err.pos]
        return f"invalid character {char!r} {_GO_JSON_CONTEXT.get(err.msg, 'looking for beginning of value')}"
    if not isinstance(value, dict):
        return f"json: cannot unmarshal {go_json_kind(value)} into Go value of type map[string]interface {{}}"
    return None


class SecretStrategy(Strategy):
    kind = "Secret"
    resource = "secrets"
    singular = "secret"
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        merge_string_data(obj)
        obj["type"] = obj.get("type") or OPAQUE

    def prepare_for_update(self, new: Object, old: Object) -> None:
        """The body is decoded and defaulted like a create's; ``type`` omitted from it means the stored one."""
        merge_string_data(new)
        new["type"] = new.get("type") or old.get("type") or OPAQUE

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateSecret``: valid keys, at most 1 MiB of decoded data, the keys the ``type`` requires."""
        data: dict[str, str] = obj.get("data") or {}
        causes: list[Cause] = []
        for key in data:
            causes.extend(key_causes("data", key))
        if sum(len(decode_data(value)) for value in data.values()) > MAX_SECRET_SIZE:
            causes.append(too_long("data", MAX_SECRET_SIZE))
        return causes + self._type_causes(obj, data)

    def _type_causes(self, obj: Object, data: dict[str, str]) -> list[Cause]:
        """The data (or annotation) each well-known secret type must carry."""
        kind = obj.get("type") or OPAQUE
        if kind == SERVICE_ACCOUNT_TOKEN:
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
                return [required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]")]
        elif kind in DOCKER_KEYS:
            key = DOCKER_KEYS[kind]
            if key not in data:
                return [required(f"data[{key}]")]
            problem = go_json_object_error(decode_data(data[key]))
            if problem is not None:
                return [invalid(f"data[{key}]", REDACTED, problem)]
        elif kind == BASIC_AUTH:
            if "username" not in data and "password" not in data:  # either may be empty, one must be there
                return [required("data[username]"), required("data[password]")]
        elif kind == SSH_AUTH:
            if not decode_data(data.get("ssh-privatekey", "")):
                return [required("data[ssh-privatekey]")]
        elif kind == TLS:
            return [required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]
        return []

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidateSecretUpdate``: ``type`` never changes; an immutable Secret keeps its data."""
        causes = validate_immutable(new.get("type"), old.get("type"), "type")
        return causes + validate_immutable_data(new, old, ("data",)) + self.validate(new)

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        """``type`` besides the metadata fields (``SelectableFields`` of the secret strategy)."""
        return {**super().selectable_fields(obj), "type": str(obj.get("type") or "")}

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Type", description="Used to facilitate programmatic handling of secret data. More "
                            "info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
                TableColumn("Data", description="Data contains the secret data. Each key must consist of "
                            "alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a "
                            "base64 encoded string, representing the arbitrary (possibly non-string) data value "
                            "here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), obj.get("type") or "", len(obj.get("data") or {}),
                since(metadata.get("creationTimestamp"))]
