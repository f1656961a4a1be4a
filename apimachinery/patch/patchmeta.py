"""The one table of strategic-merge-patch metadata: which lists merge, by which key, and where ``retainKeys`` applies.

Kubernetes keeps this in struct tags (``patchStrategy:"merge" patchMergeKey:"name"`` in ``k8s.io/api``); here each
API struct that has such a field is one ``Struct`` mapping, and kinds are assembled from them, so the PodSpec
rules are written once and reused wherever a pod template appears (ReplicationController, ReplicaSet,
Deployment, DaemonSet, StatefulSet, Job, CronJob, PodTemplate).

Only fields that differ from the default are listed. The default — for fields listed without a strategy and
for every field not listed — is what Kubernetes does for an untagged field: objects and maps merge key by key,
lists are replaced whole (``tolerations``, ``taints``, ``containerStatuses``, ``args`` …). A kind this table does
not know gets the generic rules: object metadata only.

Look-ups::

    schema("Pod")                                   # the root Struct of a kind
    lookup("Pod", ("spec", "containers"))           # Field(strategy="merge", merge_key="name", ...)
    lookup("Pod", ("spec", "containers", "env"))    # list paths continue into the element's fields
    lookup("Pod", ("spec", "tolerations"))          # None: the default (replace) applies
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Strategy = Literal["", "merge", "replace"]


@dataclass(frozen=True, slots=True)
class Field:
    """Patch metadata of one field; ``schema`` describes the field's object type (for lists: the element's)."""

    strategy: Strategy = ""
    merge_key: str = ""
    retain_keys: bool = False
    schema: Mapping[str, Field] = field(default_factory=lambda: EMPTY)


Struct = Mapping[str, Field]
EMPTY: Struct = MappingProxyType({})


def _struct(**fields: Field) -> Struct:
    return MappingProxyType(fields)


def _merge_by(key: str, schema: Struct = EMPTY, *, retain_keys: bool = False) -> Field:
    """A list of objects merged element by element on ``key``."""
    return Field("merge", key, retain_keys, schema)


MERGE_SET = Field("merge")  # a list of strings merged as a set (finalizers, podCIDRs)


def _nested(schema: Struct, *, retain_keys: bool = False) -> Field:
    """An object field whose own fields carry metadata."""
    return Field("", "", retain_keys, schema)


# --- apimachinery meta/v1 -----------------------------------------------------------------------------------

OBJECT_META = _struct(
    finalizers=MERGE_SET,
    ownerReferences=_merge_by("uid"),
)
CONDITIONS_STATUS = _struct(conditions=_merge_by("type"))  # every status whose conditions are keyed by type

# --- core/v1 Pod ----------------------------------------------------------------------------------------------

CONTAINER = _struct(
    ports=_merge_by("containerPort"),
    env=_merge_by("name"),
    volumeMounts=_merge_by("mountPath"),
    volumeDevices=_merge_by("devicePath"),
)
POD_SPEC = _struct(
    volumes=_merge_by("name", retain_keys=True),
    initContainers=_merge_by("name", CONTAINER),
    containers=_merge_by("name", CONTAINER),
    ephemeralContainers=_merge_by("name", CONTAINER),
    imagePullSecrets=_merge_by("name"),
    hostAliases=_merge_by("ip"),
    topologySpreadConstraints=_merge_by("topologyKey"),
    schedulingGates=_merge_by("name"),
    resourceClaims=_merge_by("name", retain_keys=True),
)
POD_STATUS = _struct(
    conditions=_merge_by("type"),
    podIPs=_merge_by("ip"),
    hostIPs=_merge_by("ip"),
    resourceClaimStatuses=_merge_by("name", retain_keys=True),
)
POD_TEMPLATE_SPEC = _struct(metadata=_nested(OBJECT_META), spec=_nested(POD_SPEC))


def _kind(spec: Struct = EMPTY, status: Struct = EMPTY, **top: Field) -> Struct:
    """A top-level kind: ``metadata`` is always ObjectMeta."""
    fields = {"metadata": _nested(OBJECT_META), **top}
    if spec:
        fields["spec"] = _nested(spec)
    if status:
        fields["status"] = _nested(status)
    return MappingProxyType(fields)


_TEMPLATED = _struct(template=_nested(POD_TEMPLATE_SPEC))  # ReplicationController / ReplicaSet / DaemonSet / Job

# --- the kinds ------------------------------------------------------------------------------------------------

GENERIC = _kind()

KINDS: Mapping[str, Struct] = MappingProxyType({
    "Pod": _kind(POD_SPEC, POD_STATUS),
    "PodTemplate": _kind(template=_nested(POD_TEMPLATE_SPEC)),
    "ReplicationController": _kind(_TEMPLATED, CONDITIONS_STATUS),
    "ReplicaSet": _kind(_TEMPLATED, CONDITIONS_STATUS),
    "Deployment": _kind(
        _struct(template=_nested(POD_TEMPLATE_SPEC), strategy=Field(retain_keys=True)), CONDITIONS_STATUS),
    "DaemonSet": _kind(_TEMPLATED, CONDITIONS_STATUS),
    "StatefulSet": _kind(_TEMPLATED, CONDITIONS_STATUS),
    "Job": _kind(_TEMPLATED, CONDITIONS_STATUS),
    "CronJob": _kind(_struct(jobTemplate=_nested(_struct(metadata=_nested(OBJECT_META), spec=_nested(_TEMPLATED))))),
    "Node": _kind(
        _struct(podCIDRs=MERGE_SET),
        _struct(conditions=_merge_by("type"), addresses=_merge_by("type")),
    ),
    "Namespace": _kind(status=CONDITIONS_STATUS),
    "Service": _kind(_struct(ports=_merge_by("port")), CONDITIONS_STATUS),
    "ConfigMap": GENERIC,
    "Secret": GENERIC,
    "Event": GENERIC,
    "Lease": GENERIC,
    "Endpoints": GENERIC,
    "Binding": GENERIC,
})


def schema(kind: str) -> Struct:
    """The root ``Struct`` of ``kind`` (the generic metadata-only rules for kinds not in the table)."""
    return KINDS.get(kind, GENERIC)


def lookup(kind: str, path: tuple[str, ...]) -> Field | None:
    """The metadata of the field at ``path`` (field names only; a list's path continues into its elements).

    ``None`` means no special rule: the field merges if it is an object and is replaced if it is a list.
    """
    struct = schema(kind)
    found: Field | None = None
    for name in path:
        found = struct.get(name)
        if found is None:
            return None
        struct = found.schema
    return found
