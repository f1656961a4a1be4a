"""The strategy and decoder of one served version of a custom resource, built from its CRD.

Custom resources go through the same ``ResourceStore`` and handlers as built-in resources; everything that
makes them custom lives here, as kube-apiextensions-apiserver's ``customresource`` strategy does:

* ``CustomResourceDecoder`` stands where the OpenAPI decoder stands for built-in kinds: it prunes unknown fields
  (a ``Warning``, or a 400 with ``fieldValidation=Strict``) and applies the schema's defaults;
* ``CustomResourceStrategy`` validates against the structural schema, keeps status apart when the ``status``
  subresource is on (``metadata.generation`` then moves only with non-status changes), maps ``/scale`` onto the
  CRD's replica and selector paths, renders ``additionalPrinterColumns`` and exposes ``selectableFields``;
* versions convert with strategy ``None``: only ``apiVersion`` changes between the storage and served versions;
  with ``Webhook``, the store sends objects of another version through the CRD's ``WebhookConverter``
  (``conversion``) first; objects read back are defaulted with the served version's schema.
"""

from __future__ import annotations

from typing import Any

import orjson

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.validation import IS_NEGATIVE_ERROR_MSG, invalid
from apiserver.registry.decoder import Decoder, unknown_fields
from apiserver.registry.strategy import (
    NAME_COLUMN,
    Converter,
    Object,
    Strategy,
    TableColumn,
    human_duration,
    translate_age,
)

from . import crd as crds
from . import jsonpath, pruning, schemavalidation
from .schemavalidation import RuleValidator

SCALE_API_VERSION = "autoscaling/v1"


class CustomResourceDecoder:
    """Pruning and defaulting of request bodies (the ``Decoder`` interface the store calls); ``metadata`` is
    decoded as the ObjectMeta it is (by the built-in ``meta`` decoder, when given)."""

    def __init__(self, schema: Object, meta: Decoder | None = None) -> None:
        self.schema = schema
        self.meta = meta
        self.defaulter = pruning.Defaulter(schema)

    def decode(self, obj: dict[str, Any], group: str, version: str, kind: str,
               field_validation: str = "Ignore", old: dict[str, Any] | None = None) -> list[str]:
        """Prune against the structural schema and default; ``old`` (the stored object) is not used: defaulting
        must run over the whole object."""
        unknown: list[str] = []
        if self.meta is not None and isinstance(obj.get("metadata"), dict):
            unknown = self.meta.unknown_in(obj["metadata"], crds.OBJECT_META, kind, version, "metadata")
        unknown += pruning.prune(obj, self.schema)
        self.defaulter.apply(obj)
        return unknown_fields(unknown, field_validation)


class CustomResourceStrategy(Strategy):
    """One served version of one CRD; instance attributes stand for the class attributes of built-in ones."""

    protobuf = False
    strategic_merge = False
    core_finalizer_names = False

    def __init__(self, crd: Object, version: str, rules: RuleValidator | None = None,
                 meta: Decoder | None = None, converter: Converter | None = None) -> None:
        spec = crd["spec"]
        names = {**(spec.get("names") or {}), **{k: v for k, v in
                                                 ((crd.get("status") or {}).get("acceptedNames") or {}).items() if v}}
        served = crds.version_of(crd, version) or {}
        self.group = spec["group"]
        self.version = version
        self.storage_version = crds.storage_version(crd)
        self.kind = names["kind"]
        self._list_kind = names.get("listKind") or f"{self.kind}List"
        self.resource = names["plural"]
        self.singular = names.get("singular") or self.kind.lower()
        self.namespaced = spec.get("scope") == "Namespaced"
        self.short_names = tuple(names.get("shortNames") or ())
        self.categories = tuple(names.get("categories") or ())
        subresources = served.get("subresources") or {}
        self.subresources = tuple(s for s in ("status", "scale") if isinstance(subresources.get(s), dict))
        self.scale_paths: Object = subresources.get("scale") or {}
        self.schema: Object = crds.schema_of(served)
        self.printer_columns: list[Object] = list(served.get("additionalPrinterColumns") or [])
        self.selectable: tuple[str, ...] = tuple(str(f.get("jsonPath", "")) for f in served.get("selectableFields")
                                                 or [] if isinstance(f, dict) and f.get("jsonPath"))
        self.deprecation_warning: str | None = (served.get("deprecationWarning") or
                                                default_deprecation_warning(crd, version, self.kind)
                                                if served.get("deprecated") else None)
        self.rules = rules or schemavalidation.NoRules()
        self.decoder = CustomResourceDecoder(self.schema, meta)
        self.validator = schemavalidation.SchemaValidator(self.schema)
        self.terminating = bool(crd["metadata"].get("deletionTimestamp"))
        self.converter = converter

    @property
    def list_kind(self) -> str:
        return self._list_kind

    # --- storage --------------------------------------------------------------------------------------------
    def etcd_prefix(self) -> str:
        return f"/registry/{self.group}/{self.resource}/"

    @property
    def converts(self) -> bool:
        return True

    def to_storage(self, obj: Object) -> Object:
        if self.version == self.storage_version:
            return obj
        return {**obj, "apiVersion": f"{self.group}/{self.storage_version}"}

    def from_storage(self, obj: Object) -> Object:
        obj["apiVersion"] = self.api_version
        self.decoder.defaulter.apply(obj)
        return obj

    # --- create and update ----------------------------------------------------------------------------------
    def prepare_for_create(self, obj: Object) -> None:
        if self.terminating:  # kube's crdHandler: the CRD's resources are being deleted
            raise errors.MethodNotAllowed("create not allowed while custom resource definition is terminating")
        if "status" in self.subresources:
            obj.pop("status", None)

    def validate(self, obj: Object) -> list[Cause]:
        return self.validator.validate(obj, self.rules)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validator.validate(new, self.rules, old)

    def spec_changed(self, new: Object, old: Object) -> bool:
        """Every change but metadata's (and status', when it is a subresource) is a new generation."""
        skip = ("apiVersion", "kind", "metadata", "status") if "status" in self.subresources else \
            ("apiVersion", "kind", "metadata")
        return {k: v for k, v in new.items() if k not in skip} != {k: v for k, v in old.items() if k not in skip}

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validator.validate(new, self.rules, old)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        if "status" in self.subresources:
            super().prepare_for_update(new, old)

    # --- scale ----------------------------------------------------------------------------------------------
    def selector_string(self, obj: Object) -> str:
        path = self.scale_paths.get("labelSelectorPath")
        value = jsonpath.get(obj, path) if path else None
        return value if isinstance(value, str) else ""

    def scale_of(self, obj: Object) -> dict[str, Any]:
        metadata = obj.get("metadata") or {}
        spec_replicas = jsonpath.get(obj, self.scale_paths.get("specReplicasPath") or ".spec.replicas")
        status_replicas = jsonpath.get(obj, self.scale_paths.get("statusReplicasPath") or ".status.replicas")
        status: dict[str, Any] = {"replicas": int(status_replicas or 0)}
        selector = self.selector_string(obj)
        if selector:
            status["selector"] = selector
        replicas = int(spec_replicas or 0)
        return {"kind": "Scale", "apiVersion": SCALE_API_VERSION,
                "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                      "creationTimestamp") if metadata.get(k)},
                "spec": {"replicas": replicas} if replicas else {}, "status": status}

    def apply_scale(self, obj: Object, replicas: int) -> None:
        jsonpath.set_path(obj, self.scale_paths.get("specReplicasPath") or ".spec.replicas", int(replicas))

    def validate_scale(self, scale: dict[str, Any]) -> list[Cause]:
        replicas = (scale.get("spec") or {}).get("replicas") or 0
        return [invalid("spec.replicas", replicas, IS_NEGATIVE_ERROR_MSG)] if replicas < 0 else []

    # --- fields and tables ----------------------------------------------------------------------------------
    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        for path in self.selectable:
            value = jsonpath.get(obj, path)
            text = "" if value is None else ("true" if value is True else "false" if value is False else str(value))
            fields[path.lstrip(".")] = text
        return fields

    def columns(self) -> list[TableColumn]:
        if not self.printer_columns:
            return [NAME_COLUMN, TableColumn("Age", type="date", description="Custom resource definition column "
                                                                             "(in JSONPath format): "
                                                                             ".metadata.creationTimestamp")]
        return [NAME_COLUMN, *(TableColumn(c.get("name", ""), type=c.get("type", "string"), format=c.get("format", ""),
                                           description=c.get("description") or
                                           f"Custom resource definition column (in JSONPath format): "
                                           f"{c.get('jsonPath', '')}", priority=int(c.get("priority") or 0))
                               for c in self.printer_columns)]

    def row(self, obj: Object) -> list[Any]:
        if not self.printer_columns:
            return [obj["metadata"]["name"], translate_age(obj)]
        return [obj["metadata"]["name"], *(_cell(obj, c) for c in self.printer_columns)]


def default_deprecation_warning(crd: Object, version: str, kind: str) -> str:
    """kube's ``defaultDeprecationWarning``: the newest served, non-deprecated version newer than this one is
    named as the one to use."""
    group = crd["spec"]["group"]
    message = f"{group}/{version} {kind} is deprecated"
    newer = sorted((v.get("name", "") for v in crds.versions(crd) if v.get("served") and not v.get("deprecated")
                    and crds.version_priority(v.get("name", "")) < crds.version_priority(version)),
                   key=crds.version_priority)
    return f"{message}; use {group}/{newer[0]} {kind}" if newer else message


def _cell(obj: Object, column: Object) -> Any:
    """A printer column's cell as kube's table convertor renders it: nothing found is null; a date is its age."""
    try:
        found = jsonpath.find(obj, str(column.get("jsonPath", "")))
    except jsonpath.JSONPathError:
        return None
    if not found:
        return None
    kind = column.get("type")
    if kind == "date":
        value = found[0]
        if isinstance(value, str):
            try:
                return human_duration(value)
            except ValueError:
                return value
        return None
    if len(found) > 1:
        return ",".join(str(v) for v in found)
    value = found[0]
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "string":
        return value if isinstance(value, str) else _text(value)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()
