"""The resources the components use, and the one place that maps them to and from URL paths.

A ``Resource`` is client-go's GroupVersionResource plus what a client must know without asking discovery:
its kind, whether it is namespaced and which subresources it serves.  Paths follow kube-apiserver exactly::

    /api/v1/pods                                      all namespaces (list, watch)
    /api/v1/namespaces/{ns}/pods                      collection in one namespace
    /api/v1/namespaces/{ns}/pods/{name}[/{sub}]       item, subresource (status, binding, eviction, …)
    /apis/apps/v1/namespaces/{ns}/deployments/...     named groups live under /apis/{group}/{version}
    /api/v1/nodes/{name}[/status]                     cluster-scoped
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, unquote


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST resource: ``group`` is ``""`` for the core (legacy) group served under ``/api``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = field(default_factory=frozenset)

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of this resource's objects: ``v1`` or ``apps/v1``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def prefix(self) -> str:
        """``/api/v1`` or ``/apis/{group}/{version}``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection (``name`` None) or of one object or subresource.

        ``namespace`` None on a namespaced resource means all namespaces, which only a collection can be.
        """
        if subresource and not name:
            raise ValueError(f"{self.plural}: a subresource needs an object name")
        parts = [self.prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        elif self.namespaced and name:
            raise ValueError(f"{self.plural} is namespaced: an object path needs a namespace")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


_CORE_POD_SUBRESOURCES = frozenset({"status", "binding", "eviction", "log", "exec", "attach", "portforward"})

PODS = Resource("", "v1", "pods", "Pod", True, _CORE_POD_SUBRESOURCES)
NODES = Resource("", "v1", "nodes", "Node", False, frozenset({"status", "proxy"}))
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False, frozenset({"status", "finalize"}))
EVENTS = Resource("", "v1", "events", "Event", True)
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", True)
REPLICATION_CONTROLLERS = Resource("", "v1", "replicationcontrollers", "ReplicationController", True,
                                   frozenset({"status", "scale"}))
SERVICES = Resource("", "v1", "services", "Service", True, frozenset({"status"}))
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota", True, frozenset({"status"}))
LIMIT_RANGES = Resource("", "v1", "limitranges", "LimitRange", True)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", False, frozenset({"status"}))
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True,
                                    frozenset({"status"}))
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True, frozenset({"status", "scale"}))
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True, frozenset({"status", "scale"}))
JOBS = Resource("batch", "v1", "jobs", "Job", True, frozenset({"status"}))
CRON_JOBS = Resource("batch", "v1", "cronjobs", "CronJob", True, frozenset({"status"}))
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True, frozenset({"status"}))
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision", True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True, frozenset({"status", "scale"}))
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
                                  frozenset({"status"}))
HORIZONTAL_POD_AUTOSCALERS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                                      frozenset({"status"}))
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CERTIFICATE_SIGNING_REQUESTS = Resource("certificates.k8s.io", "v1", "certificatesigningrequests",
                                        "CertificateSigningRequest", False, frozenset({"approval", "status"}))
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False)

RESOURCES: tuple[Resource, ...] = (
    PODS, NODES, NAMESPACES, EVENTS, REPLICATION_CONTROLLERS, SERVICES, CONFIG_MAPS, SECRETS, SERVICE_ACCOUNTS,
    ENDPOINTS, REPLICA_SETS, DEPLOYMENTS, DAEMON_SETS, CONTROLLER_REVISIONS, STATEFUL_SETS, JOBS, CRON_JOBS, LEASES,
    ENDPOINT_SLICES, POD_DISRUPTION_BUDGETS, HORIZONTAL_POD_AUTOSCALERS, RESOURCE_QUOTAS, LIMIT_RANGES,
    PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES,
    CLUSTER_ROLES, CERTIFICATE_SIGNING_REQUESTS, SUBJECT_ACCESS_REVIEWS,
)

_BY_NAME: dict[str, Resource] = {}
for _r in RESOURCES:
    _BY_NAME[_r.plural] = _r
    _BY_NAME[_r.kind.lower()] = _r
_BY_GVR: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}


def resource_for(name: str) -> Resource:
    """Look a resource up by plural (``pods``) or kind (``Pod``, case-insensitive); ``KeyError`` if unknown."""
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        raise KeyError(f"unknown resource {name!r}") from None


@dataclass(frozen=True, slots=True)
class RequestPath:
    """A path split back into its parts (the inverse of ``Resource.path``)."""

    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_path(path: str, resources: tuple[Resource, ...] = RESOURCES) -> RequestPath:
    """Split ``/api/v1/namespaces/ns/pods/x/status`` into its parts; ``KeyError`` for an unknown resource.

    ``/api/v1/namespaces/{name}[/status|/finalize]`` is the namespace object itself; otherwise
    ``namespaces/{ns}/{plural}`` scopes a namespaced resource — kube-apiserver's RequestInfo rule.
    """
    segs = [s for s in path.split("?", 1)[0].split("/") if s]
    if len(segs) >= 2 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        raise KeyError(f"not an API path: {path!r}")
    table = {(r.group, r.version, r.plural): r for r in resources} if resources is not RESOURCES else _BY_GVR
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in NAMESPACES.subresources:
        namespace, rest = unquote(rest[1]), rest[2:]
    if not rest:
        raise KeyError(f"no resource in path {path!r}")
    res = table.get((group, version, rest[0]))
    if res is None:
        raise KeyError(f"unknown resource in path {path!r}")
    name = unquote(rest[1]) if len(rest) > 1 else None
    sub = "/".join(rest[2:]) or None
    return RequestPath(res, namespace, name, sub)
