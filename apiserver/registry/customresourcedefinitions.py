"""CustomResourceDefinitions (apiextensions.k8s.io/v1): defaults, kube's validation, stored versions, deletion.

What the apiserver's CRD controllers (``apiserver.apiextensions.controller``) do with a CRD — accepting its
names, establishing it, serving its custom resources, removing them when it goes — happens after it is stored;
this strategy only holds the object's own rules (kube-apiextensions-apiserver's ``customresourcedefinition``
strategy and ``validation.go``):

* create: ``singular`` defaults to the lower-cased kind, ``listKind`` to ``<kind>List``, conversion to ``None``;
  status starts over with ``storedVersions`` = the storage version;
* update: the storage version joins ``storedVersions``; group and plural never change, scope and kind not once
  Established; every stored version must stay in ``spec.versions``;
* delete: the first DELETE only marks the CRD (Terminating, ``customresourcecleanup`` finalizer); the finalizer
  controller removes the custom resources, then the finalizer, and the CRD goes.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    not_supported,
    required,
    validate_immutable,
)
from apiserver.apiextensions import crd as crds
from apiserver.apiextensions.structural import validate_schema
from apiserver.registry.strategy import NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.webhookconfigurations import (
    validate_review_versions,
    validate_webhook_service,
    validate_webhook_url,
)

SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
CONVERSION_STRATEGIES = ("None", "Webhook")
MAX_SELECTABLE_FIELDS = 8
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"


def _protected(group: str) -> bool:
    """Groups of the Kubernetes project (``*.k8s.io``, ``*.kubernetes.io``) need an approved API review."""
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


class CustomResourceDefinitionStrategy(Strategy):
    group = crds.GROUP
    kind = "CustomResourceDefinition"
    resource = "customresourcedefinitions"
    singular = "customresourcedefinition"
    namespaced = False
    short_names = ("crd", "crds")
    categories = ("api-extensions",)
    subresources = ("status",)
    core_finalizer_names = False

    # --- create ---------------------------------------------------------------------------------------------
    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        set_defaults(spec)
        obj["status"] = {"acceptedNames": {"kind": "", "plural": ""}, "conditions": [],
                         "storedVersions": [v for v in [crds.storage_version(obj)] if v]}

    def validate(self, obj: Object) -> list[Cause]:
        return validate_crd(obj)

    # --- update ---------------------------------------------------------------------------------------------
    def prepare_for_update(self, new: Object, old: Object) -> None:
        set_defaults(new.setdefault("spec", {}))
        super().prepare_for_update(new, old)
        _add_stored_version(new)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = validate_crd(new)
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        names, old_names = spec.get("names") or {}, old_spec.get("names") or {}
        if crds.is_true(old, "Established"):
            causes += validate_immutable(spec.get("scope"), old_spec.get("scope"), "spec.scope")
            causes += validate_immutable(names.get("kind"), old_names.get("kind"), "spec.names.kind")
        causes += validate_immutable(spec.get("group"), old_spec.get("group"), "spec.group")
        causes += validate_immutable(names.get("plural"), old_names.get("plural"), "spec.names.plural")
        return causes + _stored_versions_causes(new)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        accepted = (new.get("status") or {}).get("acceptedNames") or {}
        return validate_names(accepted, "status.acceptedNames") + _stored_versions_causes(new)

    # --- delete ---------------------------------------------------------------------------------------------
    def deletion_pending(self, obj: Object) -> bool:
        """The first DELETE always marks the CRD: its custom resources must go first."""
        return not obj["metadata"].get("deletionTimestamp")

    def prepare_for_delete(self, obj: Object) -> None:
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if crds.CLEANUP_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, crds.CLEANUP_FINALIZER]
        crds.set_condition(obj, {"type": "Terminating", "status": "True", "reason": "InstanceDeletionPending",
                                 "message": "CustomResourceDefinition marked for deletion; CustomResource deletion "
                                            "will begin soon"})

    # --- table ----------------------------------------------------------------------------------------------
    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Created At", type="date", description="CreationTimestamp is a timestamp "
                                         "representing the server time when this object was created.")]

    def row(self, obj: Object) -> list[Any]:
        return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]


def set_defaults(spec: Object) -> None:
    """``SetDefaults_CustomResourceDefinitionSpec`` (v1)."""
    names = spec.get("names")
    if isinstance(names, dict):
        if not names.get("singular") and names.get("kind"):
            names["singular"] = str(names["kind"]).lower()
        if not names.get("listKind") and names.get("kind"):
            names["listKind"] = f"{names['kind']}List"
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}
    elif not spec["conversion"].get("strategy"):
        spec["conversion"]["strategy"] = "None"
    for version in spec.get("versions") or []:
        scale = ((version or {}).get("subresources") or {}).get("scale") if isinstance(version, dict) else None
        if isinstance(scale, dict):
            scale.setdefault("specReplicasPath", "")
            scale.setdefault("statusReplicasPath", "")


def _add_stored_version(crd: Object) -> None:
    storage = crds.storage_version(crd)
    status = crd.setdefault("status", {})
    stored = list(status.get("storedVersions") or [])
    if storage and storage not in stored:
        status["storedVersions"] = [*stored, storage]


def _stored_versions_causes(crd: Object) -> list[Cause]:
    names = {v.get("name") for v in crds.versions(crd)}
    stored = (crd.get("status") or {}).get("storedVersions") or []
    return [invalid(f"status.storedVersions[{i}]", v, "must appear in spec.versions")
            for i, v in enumerate(stored) if v not in names]


# --- validation ---------------------------------------------------------------------------------------------
def validate_crd(obj: Object) -> list[Cause]:
    """``ValidateCustomResourceDefinition`` for v1: name, spec, versions and their schemas."""
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    name = obj["metadata"].get("name", "")
    if name != f"{names.get('plural', '')}.{spec.get('group', '')}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    group = spec.get("group") or ""
    if not group:
        causes.append(required("spec.group"))
    elif errs := is_dns1123_subdomain(group):
        causes.append(invalid("spec.group", group, ",".join(errs)))
    elif len(group.split(".")) < 2:
        causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    if _protected(group) and not (obj["metadata"].get("annotations") or {}).get(APPROVAL_ANNOTATION):
        causes.append(required(f"metadata.annotations[{APPROVAL_ANNOTATION}]",
                               f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", see '
                               f"https://github.com/kubernetes/enhancements/pull/1111"))
    scope = spec.get("scope") or ""
    if not scope:
        causes.append(required("spec.scope"))
    elif scope not in SCOPES:
        causes.append(not_supported("spec.scope", scope, SCOPES))
    causes += _versions_causes(spec)
    for field in ("plural", "singular", "kind", "listKind"):
        if not names.get(field):
            causes.append(required(f"spec.names.{field}"))
    causes += validate_names(names, "spec.names")
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy") not in (None, "None") and spec.get("preserveUnknownFields"):
        causes.append(invalid("spec.conversion.strategy", conversion.get("strategy"),
                              "must be None if spec.preserveUnknownFields is true"))
    return causes + _conversion_causes(conversion)


def _conversion_causes(conversion: Object) -> list[Cause]:
    """``validateCustomResourceConversion``; paths name the internal fields, as kube's messages do
    (``webhookClientConfig`` for v1's ``webhook.clientConfig``)."""
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    webhook = conversion.get("webhook") or {}
    config = webhook.get("clientConfig")
    review_versions = webhook.get("conversionReviewVersions") or []
    if strategy not in CONVERSION_STRATEGIES:
        return [not_supported(f"{path}.strategy", strategy, CONVERSION_STRATEGIES)]
    causes: list[Cause] = []
    if strategy != "Webhook":
        if config is not None:
            causes.append(forbidden(f"{path}.webhookClientConfig",
                                    "should not be set when strategy is not set to Webhook"))
        if review_versions:
            causes.append(forbidden(f"{path}.conversionReviewVersions",
                                    "should not be set when strategy is not set to Webhook"))
        return causes
    if not isinstance(config, dict):
        causes.append(required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
    elif ("url" in config) == ("service" in config):
        causes.append(required(f"{path}.webhookClientConfig", "exactly one of url or service is required"))
    elif "url" in config:
        causes.extend(validate_webhook_url(f"{path}.webhookClientConfig.url", str(config["url"])))
    else:
        causes.extend(validate_webhook_service(f"{path}.webhookClientConfig.service", config["service"] or {}))
    return causes + validate_review_versions(review_versions, f"{path}.conversionReviewVersions", "")


def _versions_causes(spec: Object) -> list[Cause]:
    versions = spec.get("versions")
    if not versions:
        return [invalid("spec.versions", [], "must have exactly one version marked as storage version"),
                required("spec.versions", "must contain at least one version")]
    causes: list[Cause] = []
    seen: set[str] = set()
    unique = True
    storage = 0
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append(invalid(path, version, "must be an object"))
            continue
        vname = version.get("name") or ""
        unique = unique and vname not in seen
        seen.add(vname)
        if version.get("storage"):
            storage += 1
        if errs := is_dns1035_label(vname):
            causes.append(invalid(f"{path}.name", vname, ",".join(errs)))
        causes += validate_schema(crds.schema_of(version) or None, f"{path}.schema.openAPIV3Schema")
        causes += _subresources_causes(version.get("subresources"), f"{path}.subresources")
        causes += _columns_causes(version.get("additionalPrinterColumns") or [], f"{path}.additionalPrinterColumns")
        causes += _selectable_causes(version.get("selectableFields") or [], f"{path}.selectableFields")
        if version.get("deprecationWarning") is not None and not version.get("deprecated"):
            causes.append(invalid(f"{path}.deprecationWarning", version["deprecationWarning"],
                                  "can only be set for deprecated versions"))
    if not unique:
        causes.append(invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                              "must contain unique version names"))
    if storage != 1:
        causes.append(invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                              "must have exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") for v in versions):
        causes.append(invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                              "must have at least one version marked as served"))
    return causes


def validate_names(names: Object, path: str) -> list[Cause]:
    """``ValidateCustomResourceDefinitionNames``."""
    causes: list[Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field) or ""
        if value and (errs := is_dns1035_label(value)):
            causes.append(invalid(f"{path}.{field}", value, ",".join(errs)))
    for field in ("kind", "listKind"):
        value = names.get(field) or ""
        if value and (errs := is_dns1035_label(value.lower())):
            causes.append(invalid(f"{path}.{field}", value,
                                  "may have mixed case, but should otherwise match: " + ",".join(errs)))
    for field in ("shortNames", "categories"):
        for i, value in enumerate(names.get(field) or []):
            if errs := is_dns1035_label(str(value)):
                causes.append(invalid(f"{path}.{field}[{i}]", value, ",".join(errs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(invalid(f"{path}.listKind", names["listKind"], "kind and listKind may not be the same"))
    return causes


def _subresources_causes(subresources: Any, path: str) -> list[Cause]:
    scale = (subresources or {}).get("scale") if isinstance(subresources, dict) else None
    if not isinstance(scale, dict):
        return []
    causes: list[Cause] = []
    spec_path = scale.get("specReplicasPath") or ""
    if not spec_path:
        causes.append(required(f"{path}.scale.specReplicasPath"))
    elif not spec_path.startswith(".spec."):
        causes.append(invalid(f"{path}.scale.specReplicasPath", spec_path, "should be a json path under .spec"))
    status_path = scale.get("statusReplicasPath") or ""
    if not status_path:
        causes.append(required(f"{path}.scale.statusReplicasPath"))
    elif not status_path.startswith(".status."):
        causes.append(invalid(f"{path}.scale.statusReplicasPath", status_path,
                              "should be a json path under .status"))
    selector = scale.get("labelSelectorPath")
    if selector and not selector.startswith((".spec.", ".status.")):
        causes.append(invalid(f"{path}.scale.labelSelectorPath", selector,
                              "should be a json path under either .spec or .status"))
    return causes


def _columns_causes(columns: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, column in enumerate(columns):
        at = f"{path}[{i}]"
        if not isinstance(column, dict):
            causes.append(invalid(at, column, "must be an object"))
            continue
        if not column.get("name"):
            causes.append(required(f"{at}.name"))
        if column.get("type") not in COLUMN_TYPES:
            causes.append(not_supported(f"{at}.type", column.get("type") or "", COLUMN_TYPES))
        if column.get("format") and column["format"] not in COLUMN_FORMATS:
            causes.append(not_supported(f"{at}.format", column["format"], COLUMN_FORMATS))
        if not column.get("jsonPath"):
            causes.append(required(f"{at}.JSONPath"))
        elif not str(column["jsonPath"]).startswith("."):
            causes.append(invalid(f"{at}.JSONPath", column["jsonPath"], "must be a simple json path starting with ."))
    return causes


def _selectable_causes(fields: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(fields) > MAX_SELECTABLE_FIELDS:
        causes.append(Cause("FieldValueTooMany", f"Too many: {len(fields)}: must have at most "
                                                 f"{MAX_SELECTABLE_FIELDS} items", path))
    for i, field in enumerate(fields):
        json_path = (field or {}).get("jsonPath") if isinstance(field, dict) else None
        if not json_path:
            causes.append(required(f"{path}[{i}].jsonPath"))
        elif not str(json_path).startswith("."):
            causes.append(invalid(f"{path}[{i}].jsonPath", json_path, "must be a simple json path starting with ."))
    return causes
