"""The rules of one resource, in one place (kube-apiserver's ``rest.RESTCreateStrategy`` & co.).

The generic REST handlers know nothing about pods or nodes: for every request they ask the resource's
``Strategy`` to default, validate, carry status across updates, expose selectable fields and render table rows.
A strategy works on plain JSON dicts (the wire shape) and never touches storage.

Order of calls made by the handlers:
  create:        generic metadata defaults (uid, creationTimestamp, generateName …) → ``prepare_for_create``
                 → generic metadata validation + ``validate`` → 422 Invalid on any cause
  update (PUT/PATCH of the main resource):
                 ``prepare_for_update(new, old)`` (keeps ``status`` when the resource has a status subresource)
                 → ``validate_update(new, old)`` → generation bumped when ``spec_changed``
  update of ``/status``: ``prepare_for_status_update(new, old)`` (keeps everything but status) →
                 ``validate_status_update``
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from apimachinery.errors import Cause
from apimachinery.meta import json_copy

Object = dict[str, Any]


class Converter(Protocol):
    """Converts objects between versions of one resource outside this process (a CRD's conversion webhook)."""

    storage_api_version: str

    async def convert(self, objs: list[Object], api_version: str) -> list[Object]:
        """``objs`` in ``api_version`` (new objects, in order; those already in it untouched); raises a
        StatusError when the conversion fails."""
        ...


@dataclass(frozen=True, slots=True)
class TableColumn:
    """A ``meta.k8s.io/v1`` TableColumnDefinition; ``priority > 0`` columns show only with ``-o wide``."""

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format, "description": self.description,
                "priority": self.priority}


NAME_COLUMN = TableColumn("Name", format="name", description="Name must be unique within a namespace.")
AGE_COLUMN = TableColumn("Age", description="CreationTimestamp is a timestamp representing the server time when "
                                            "this object was created.")


def translate_age(obj: Object, now: datetime | None = None) -> str:
    """``kubectl``'s AGE cell: 5s, 3m10s, 2d4h … (``duration.HumanDuration``)."""
    ts = obj.get("metadata", {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    return human_duration(ts, now)


def human_duration(ts: str, now: datetime | None = None) -> str:
    then = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        h = hours % 24
        return f"{days}d{h}h" if h else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if days < 365 * 8:
        d = days % 365
        return f"{years}y{d}d" if d else f"{years}y"
    return f"{years}y"


class Strategy:
    """Defaults, validation, status handling, fields and table rows of one resource.

    Subclasses set the class attributes that identify the resource and override the hooks they need; the
    defaults here are right for a simple object with ``spec`` and ``status``. The identity (group … subresources)
    is not ClassVar: a custom resource's strategy sets it per instance.
    """

    group: str = ""
    version: str = "v1"
    kind: str
    resource: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: ClassVar[tuple[str, ...]] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )
    # Subresources served for this resource: any of "status", "scale", "binding", "eviction", "log", "exec".
    subresources: tuple[str, ...] = ()
    # Metadata a ``/status`` write cannot change (besides the server-set fields): the status strategy's resets.
    status_resets: ClassVar[tuple[str, ...]] = ()
    # Whether metadata.generation is set on create and bumped when spec_changed() (pods: False in v1.32).
    bumps_generation: ClassVar[bool] = True
    # Pods: DELETE marks the object (deletionTimestamp) and the kubelet confirms; see graceful_delete_seconds.
    graceful_deletion: ClassVar[bool] = False
    # Whether bodies may be protobuf and patches strategic merge (custom resources: JSON only, as in kube).
    protobuf: ClassVar[bool] = True
    # Whether finalizer names follow core's rule (unqualified: Kubernetes' own only) or apiextensions' generic one.
    core_finalizer_names: ClassVar[bool] = True
    strategic_merge: ClassVar[bool] = True
    # A ``Warning`` sent with every request to this version (deprecated custom resource versions).
    deprecation_warning: str | None = None
    # Objects in another version than the one wanted go through it, before ``to_storage`` and ``from_storage``.
    converter: Converter | None = None

    def name_validator(self, name: str) -> list[str]:
        """Problems with ``metadata.name`` (default: a DNS-1123 subdomain, as most resources require)."""
        from apimachinery.validation import is_dns1123_subdomain

        return is_dns1123_subdomain(name)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def etcd_prefix(self) -> str:
        """Where the objects live in etcd (custom resources: under their group, as in kube)."""
        return f"/registry/{self.resource}/"

    # --- create ---------------------------------------------------------------------------------------------
    def prepare_for_create(self, obj: Object) -> None:
        """Fill defaults the way kube-apiserver's defaulting + PrepareForCreate do; mutate ``obj`` in place."""

    def validate(self, obj: Object) -> list[Cause]:
        """Resource-specific validation of a whole object (metadata name/labels are checked generically)."""
        return []

    # --- update ---------------------------------------------------------------------------------------------
    def prepare_for_update(self, new: Object, old: Object) -> None:
        """An update of the main resource never changes status when a status subresource exists."""
        if "status" in self.subresources:
            if "status" in old:
                new["status"] = json_copy(old["status"])
            else:
                new.pop("status", None)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new)

    def spec_changed(self, new: Object, old: Object) -> bool:
        return new.get("spec") != old.get("spec")

    # --- status subresource ---------------------------------------------------------------------------------
    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        """An update of ``/status`` keeps the stored spec (and the ``status_resets`` metadata); status and the
        rest of metadata (annotations, say) come from the body, as kube-apiserver's status strategies do."""
        meta, status = new.get("metadata") or {}, new.get("status")
        new.clear()
        new.update(json_copy(old))
        new["metadata"] = meta
        for field in self.status_resets:
            if field in old["metadata"]:
                meta[field] = copy.deepcopy(old["metadata"][field])
            else:
                meta.pop(field, None)
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return []

    # --- deletion -------------------------------------------------------------------------------------------
    def forbid_delete(self, name: str) -> str | None:
        """Why a DELETE of ``name`` is refused before anything is read (admission), or None to go on."""
        return None

    def graceful_delete_seconds(self, obj: Object, requested: int | None) -> int:
        """Seconds of grace for a DELETE (0 = remove now). Only called when ``graceful_deletion`` is set."""
        return 0

    def deletion_pending(self, obj: Object) -> bool:
        """Finalization of the resource's own (beyond ``metadata.finalizers``) still to happen before a deleted
        object may go: namespaces wait for ``spec.finalizers`` to empty."""
        return False

    def prepare_for_delete(self, obj: Object) -> None:
        """Called when a DELETE marks the object (sets deletionTimestamp) instead of removing it."""

    # --- versions -------------------------------------------------------------------------------------------
    @property
    def converts(self) -> bool:
        """Whether objects pass through ``to_storage``/``from_storage`` (only strategies that override them)."""
        return type(self).to_storage is not Strategy.to_storage

    def to_storage(self, obj: Object) -> Object:
        """``obj`` in the version stored in etcd: a strategy serving another version of a resource converts
        (autoscaling/v1 HorizontalPodAutoscalers are stored as v2); the others store what they serve."""
        return obj

    def from_storage(self, obj: Object) -> Object:
        """A stored object in this strategy's version (the inverse of ``to_storage``)."""
        return obj

    # --- fields and tables ----------------------------------------------------------------------------------
    def selectable_fields(self, obj: Object) -> dict[str, str]:
        """Fields a ``fieldSelector`` may name, with their string values (``metadata.name`` always)."""
        meta = obj.get("metadata", {})
        fields = {"metadata.name": meta.get("name", "")}
        if self.namespaced:
            fields["metadata.namespace"] = meta.get("namespace", "")
        return fields

    def field_labels(self) -> frozenset[str]:
        """The field names a ``fieldSelector`` may use for this resource (others are a 400)."""
        cached = self.__dict__.get("_field_labels")
        if cached is None:
            skeleton: Object = {"metadata": {}, "spec": {}, "status": {}}
            cached = frozenset(self.selectable_fields(skeleton)) | {"metadata.name", "metadata.namespace"}
            self.__dict__["_field_labels"] = cached
        return cached

    def columns(self) -> list[TableColumn]:
        """Server-side table columns, as ``kubectl get`` shows them (default: NAME, AGE)."""
        return [NAME_COLUMN, AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        """The cells of one table row, in ``columns()`` order."""
        return [obj["metadata"]["name"], translate_age(obj)]
