"""ConfigMaps (core/v1): key names, the 1 MiB size limit, and ``immutable``.

The key and ``immutable`` rules are shared with Secrets (``secrets``), which Kubernetes validates the same way.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import forbidden, invalid, is_config_map_key, too_long
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

MAX_CONFIG_MAP_SIZE = 1 * 1024 * 1024  # core.MaxSecretSize


def key_causes(path: str, key: str) -> list[Cause]:
    """A key of a ConfigMap's or Secret's data map must be a valid config key (``IsConfigMapKey``)."""
    return [invalid(f"{path}[{key}]", key, msg) for msg in is_config_map_key(key)]


def validate_immutable_data(new: Object, old: Object, fields: tuple[str, ...]) -> list[Cause]:
    """Once ``immutable: true`` is stored, the object keeps it and its data ``fields`` forever."""
    causes: list[Cause] = []
    if old.get("immutable"):
        if not new.get("immutable"):
            causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        for key in fields:
            if (new.get(key) or {}) != (old.get(key) or {}):
                causes.append(forbidden(key, "field is immutable when `immutable` is set"))
    return causes


class ConfigMapStrategy(Strategy):
    kind = "ConfigMap"
    resource = "configmaps"
    singular = "configmap"
    short_names = ("cm",)
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateConfigMap``: valid keys, no key in both ``data`` and ``binaryData``, at most 1 MiB."""
        data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
        causes: list[Cause] = []
        for key in data:
            causes.extend(key_causes("data", key))
            if key in binary:
                causes.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        for key in binary:
            causes.extend(key_causes("binaryData", key))
        total = sum(len(str(value).encode()) for value in data.values())
        total += sum(len(value) * 3 // 4 for value in binary.values())  # base64 on the wire, bytes in the limit
        if total > MAX_CONFIG_MAP_SIZE:
            causes.append(too_long("", MAX_CONFIG_MAP_SIZE))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """An immutable ConfigMap keeps its data and its ``immutable: true`` forever."""
        return validate_immutable_data(new, old, ("data", "binaryData")) + self.validate(new)

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Data", description="Data contains the configuration data."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
        return [metadata.get("name", ""), count, since(metadata.get("creationTimestamp"))]
