"""ConfigMaps (core/v1): key names, the 1 MiB size limit, and ``immutable``."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import forbidden, invalid, is_config_map_key, too_long
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

MAX_CONFIG_MAP_SIZE = 1 * 1024 * 1024  # core.MaxSecretSize


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
        total = 0
        for key, value in data.items():
            causes.extend(invalid(f"data[{key}]", key, msg) for msg in is_config_map_key(key))
            if key in binary:
                causes.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
            total += len(str(value).encode())
        for key, value in binary.items():
            causes.extend(invalid(f"binaryData[{key}]", key, msg) for msg in is_config_map_key(key))
            total += len(value) * 3 // 4  # base64 on the wire, bytes in the limit
        if total > MAX_CONFIG_MAP_SIZE:
            causes.append(too_long("", MAX_CONFIG_MAP_SIZE))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """An immutable ConfigMap keeps its data and its ``immutable: true`` forever."""
        causes: list[Cause] = []
        if old.get("immutable"):
            if not new.get("immutable"):
                causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
            for key in ("data", "binaryData"):
                if (new.get(key) or {}) != (old.get(key) or {}):
                    causes.append(forbidden(key, "field is immutable when `immutable` is set"))
        return causes + self.validate(new)

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Data", description="Data contains the configuration data."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
        return [metadata.get("name", ""), count, since(metadata.get("creationTimestamp"))]
