"""Resource quota arithmetic and usage, shared by the ResourceQuota admission plugin and the resourcequota
controller (kube's ``pkg/quota/v1`` and its evaluators), so both count exactly the same way.

* resource lists are ``{name: Quantity}``; ``add``/``subtract``/``less_than_or_equal``/``mask`` are kube's
  ``quota.Add`` & co.; ``pretty`` prints ``cpu=1,pods=2`` (sorted) as the refusal messages do;
* ``usage(group, resource, obj)`` is an object's usage: every object counts ``count/<resource>[.<group>]``; pods
  add ``pods``, ``requests.*``/``limits.*`` (``cpu``/``memory`` are the requests) unless terminal; the core kinds
  with a legacy count name (``services``, ``secrets``, ``configmaps``, ``persistentvolumeclaims``,
  ``replicationcontrollers``, ``resourcequotas``) add it; services add ``services.nodeports`` /
  ``services.loadbalancers``; claims add ``requests.storage`` and, per storage class,
  ``<class>.storageclass.storage.k8s.io/requests.storage`` and ``…/persistentvolumeclaims``;
* ``matches_scopes`` is the scope filter (Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass
  through ``scopeSelector``); a scoped quota only covers pods, and ``BestEffort`` only the ``pods`` count;
* ``missing_constraints`` is the pod evaluator's ``Constraints``: a quota on cpu/memory needs every container to
  say it (``must specify limits.cpu for: c``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery.quantity import Quantity, parse_quantity
from apimachinery.volumes import storage_class_of

ResourceList = dict[str, Quantity]

# Core resources counted under a name of their own besides count/<resource> (kube's legacy object count names).
LEGACY_COUNTS = {"services": "services", "secrets": "secrets", "configmaps": "configmaps",
                 "persistentvolumeclaims": "persistentvolumeclaims",
                 "replicationcontrollers": "replicationcontrollers", "resourcequotas": "resourcequotas"}
POD_COMPUTE = ("cpu", "memory", "ephemeral-storage")
# ``<class>.storageclass.storage.k8s.io/requests.storage`` and ``…/persistentvolumeclaims``: a claim's usage per class.
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
# The names a quota must see declared by every container (the backwards-compatible ``Constraints`` rule).
VALIDATION_SET = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
POD_SCOPED_RESOURCES = frozenset({"pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                                  "requests.ephemeral-storage", "limits.cpu", "limits.memory",
                                  "limits.ephemeral-storage"})
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity")


def quantity(value: Any) -> Quantity:
    return parse_quantity(value if isinstance(value, (int, float, str)) else str(value))


def parse_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """A wire ResourceList (``{"cpu": "500m"}``) as quantities; values that do not parse count as 0."""
    result: ResourceList = {}
    for name, value in (raw or {}).items():
        try:
            result[name] = quantity(value)
        except ValueError:
            result[name] = Quantity(0)
    return result


def to_wire(resources: ResourceList) -> dict[str, str]:
    return {name: value.canonical() for name, value in sorted(resources.items())}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    result = dict(a)
    for name, value in b.items():
        result[name] = result[name] + value if name in result else value
    return result


def subtract(a: ResourceList, b: ResourceList) -> ResourceList:
    """``quota.Subtract``: a - b over the names of both."""
    result = dict(a)
    for name, value in b.items():
        result[name] = result[name] - value if name in result else -value
    return result


def subtract_non_negative(a: ResourceList, b: ResourceList) -> ResourceList:
    """``quota.SubtractWithNonNegativeResult``: a - b, floored at 0 (an update that frees usage charges 0)."""
    zero = Quantity(0)
    return {name: max(value, zero) for name, value in subtract(a, b).items()}


def less_than_or_equal(a: ResourceList, b: ResourceList) -> tuple[bool, list[str]]:
    """``quota.LessThanOrEqual``: whether every name of ``a`` that ``b`` limits is within it; the names over."""
    exceeded = sorted(name for name, value in a.items() if name in b and value > b[name])
    return not exceeded, exceeded


def mask(resources: ResourceList, names: Iterable[str]) -> ResourceList:
    wanted = set(names)
    return {name: value for name, value in resources.items() if name in wanted}


def pretty(resources: ResourceList) -> str:
    """``prettyPrint``: ``cpu=1,pods=2`` in name order."""
    return ",".join(f"{name}={value.canonical()}" for name, value in sorted(resources.items()))


def is_zero(resources: ResourceList) -> bool:
    return all(value.is_zero() for value in resources.values())


# --- pods ------------------------------------------------------------------------------------------------------


def container_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """``podComputeUsageHelper``: what one container's (or a pod's summed) requests and limits count as."""
    result: ResourceList = {"pods": Quantity.from_int(1)}
    for name in POD_COMPUTE:
        if name in requests:
            result[name] = requests[name]
            result[f"requests.{name}"] = requests[name]
        if name in limits:
            result[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-") or ("/" in name and "kubernetes.io/" not in name):
            result[f"requests.{name}"] = value
    return result


def _container_lists(container: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    resources = container.get("resources") or {}
    return parse_list(resources.get("requests")), parse_list(resources.get("limits"))


def _max(a: ResourceList, b: ResourceList) -> ResourceList:
    result = dict(a)
    for name, value in b.items():
        if name not in result or value > result[name]:
            result[name] = value
    return result


def pod_requests_and_limits(pod: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    """``resourcehelper.PodRequests``/``PodLimits``: the containers' sum, at least each init container's
    (restartable init containers, sidecars, run alongside and add up), plus the pod overhead."""
    spec = pod.get("spec") or {}
    requests: ResourceList = {}
    limits: ResourceList = {}
    for container in spec.get("containers") or []:
        reqs, lims = _container_lists(container)
        requests, limits = add(requests, reqs), add(limits, lims)
    sidecar_requests: ResourceList = {}
    sidecar_limits: ResourceList = {}
    init_requests: ResourceList = {}
    init_limits: ResourceList = {}
    for container in spec.get("initContainers") or []:
        reqs, lims = _container_lists(container)
        if container.get("restartPolicy") == "Always":
            sidecar_requests, sidecar_limits = add(sidecar_requests, reqs), add(sidecar_limits, lims)
            requests, limits = add(requests, reqs), add(limits, lims)
        else:
            init_requests = _max(init_requests, add(reqs, sidecar_requests))
            init_limits = _max(init_limits, add(lims, sidecar_limits))
    requests, limits = _max(requests, init_requests), _max(limits, init_limits)
    overhead = parse_list(spec.get("overhead"))
    if overhead:
        requests = add(requests, overhead)
        limits = add(limits, {name: value for name, value in overhead.items() if name in limits})
    return requests, limits


def pod_is_terminal(pod: Mapping[str, Any]) -> bool:
    """``QuotaV1Pod`` is false for a pod that no longer uses its resources (Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_usage(pod: Mapping[str, Any]) -> ResourceList:
    """``PodUsageFunc``: a live pod counts ``pods`` and its compute requests and limits; a terminal one only
    its ``count/pods``."""
    usage: ResourceList = {"count/pods": Quantity.from_int(1)}
    if pod_is_terminal(pod):
        return usage
    requests, limits = pod_requests_and_limits(pod)
    return {**usage, **container_usage(requests, limits)}


def is_best_effort(pod: Mapping[str, Any]) -> bool:
    """QoS BestEffort: no container (init ones included) requests or limits cpu or memory."""
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        requests, limits = _container_lists(container)
        if any(not requests.get(n, Quantity(0)).is_zero() or not limits.get(n, Quantity(0)).is_zero()
               for n in ("cpu", "memory")):
            return False
    return True


def missing_constraints(pod: Mapping[str, Any], required: Iterable[str]) -> str | None:
    """``podEvaluator.Constraints``: ``must specify limits.cpu for: a,b; requests.memory for: a`` when a
    quota tracks cpu/memory and a container does not declare it; None when every container does."""
    required_set = set(required) & VALIDATION_SET
    if not required_set:
        return None
    spec = pod.get("spec") or {}
    missing: dict[str, set[str]] = {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        declared = set(container_usage(*_container_lists(container)))
        for name in required_set - declared:
            missing.setdefault(name, set()).add(container.get("name", ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))


# --- any object ------------------------------------------------------------------------------------------------


def count_name(group: str, resource: str) -> str:
    """``count/pods``, ``count/deployments.apps``: the object count name of a resource."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def usage(group: str, resource: str, obj: Mapping[str, Any]) -> ResourceList:
    """Everything one object counts against a quota (see the module docstring)."""
    if group == "" and resource == "pods":
        return pod_usage(obj)
    result: ResourceList = {count_name(group, resource): Quantity.from_int(1)}
    if group == "" and resource in LEGACY_COUNTS:
        result[LEGACY_COUNTS[resource]] = Quantity.from_int(1)
    if group == "" and resource == "services":
        spec = obj.get("spec") or {}
        kind = spec.get("type") or "ClusterIP"
        ports = len(spec.get("ports") or [])
        if kind == "LoadBalancer":
            result["services.loadbalancers"] = Quantity.from_int(1)
        if kind in ("NodePort", "LoadBalancer"):
            nodeports = ports if kind == "NodePort" or spec.get("allocateLoadBalancerNodePorts", True) else 0
            result["services.nodeports"] = Quantity.from_int(nodeports)
    if group == "" and resource == "persistentvolumeclaims":
        storage = parse_list(((obj.get("spec") or {}).get("resources") or {}).get("requests")).get("storage")
        storage_class = storage_class_of(obj)
        if storage_class:
            result[f"{storage_class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = Quantity.from_int(1)
        if storage is not None:
            result["requests.storage"] = storage
            if storage_class:
                result[f"{storage_class}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
    return result


# --- scopes ----------------------------------------------------------------------------------------------------


def scope_requirements(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``spec.scopes`` and ``spec.scopeSelector.matchExpressions`` as one list of selector requirements."""
    requirements = [{"scopeName": scope, "operator": "Exists"} for scope in spec.get("scopes") or []]
    requirements.extend((spec.get("scopeSelector") or {}).get("matchExpressions") or [])
    return requirements


def _matches_scope(requirement: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    scope = requirement.get("scopeName")
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return (spec.get("activeDeadlineSeconds") is not None and spec["activeDeadlineSeconds"] >= 0)
    if scope == "NotTerminating":
        return not (spec.get("activeDeadlineSeconds") is not None and spec["activeDeadlineSeconds"] >= 0)
    if scope == "BestEffort":
        return is_best_effort(pod)
    if scope == "NotBestEffort":
        return not is_best_effort(pod)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName")
        operator, values = requirement.get("operator"), requirement.get("values") or []
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return bool(name) and name in values
        if operator == "NotIn":
            return not name or name not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        affinity = spec.get("affinity") or {}
        terms = [t for kind in ("podAffinity", "podAntiAffinity") for field in (
            "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")
            for t in (affinity.get(kind) or {}).get(field) or []]
        return any((t.get("podAffinityTerm") or t).get("namespaces") or
                   (t.get("podAffinityTerm") or t).get("namespaceSelector") is not None for t in terms)
    return False


def matches_scopes(quota_spec: Mapping[str, Any], group: str, resource: str, obj: Mapping[str, Any]) -> bool:
    """Whether a quota with these scopes covers the object (no scope: everything)."""
    requirements = scope_requirements(quota_spec)
    if not requirements:
        return True
    if (group, resource) != ("", "pods"):
        return False
    return all(_matches_scope(requirement, obj) for requirement in requirements)


def covered_names(quota_spec: Mapping[str, Any], hard: Iterable[str]) -> set[str]:
    """The hard names a quota can track for what it covers: a scoped quota only the pod compute names and
    ``pods`` (``BestEffort``: only ``pods``), an unscoped one all."""
    names = set(hard)
    requirements = scope_requirements(quota_spec)
    if not requirements:
        return names
    names &= POD_SCOPED_RESOURCES | {"count/pods"}
    if any(r.get("scopeName") == "BestEffort" for r in requirements):
        names &= {"pods", "count/pods"}
    return names


def matching_resources(group: str, resource: str, names: Iterable[str]) -> set[str]:
    """``MatchingResources``: the names among ``names`` that objects of this resource can use."""
    if (group, resource) == ("", "pods"):
        return {name for name in names if name in POD_SCOPED_RESOURCES or name == "count/pods"
                or name.startswith(("requests.", "limits.", "hugepages-"))}
    possible = {count_name(group, resource)}
    if group == "" and resource in LEGACY_COUNTS:
        possible.add(LEGACY_COUNTS[resource])
    if (group, resource) == ("", "services"):
        possible |= {"services.nodeports", "services.loadbalancers"}
    if (group, resource) == ("", "persistentvolumeclaims"):
        possible.add("requests.storage")
        possible |= {name for name in names if name.endswith(
            (f"{STORAGE_CLASS_SUFFIX}requests.storage", f"{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"))}
    return {name for name in names if name in possible}


def remove_zeros(resources: ResourceList) -> ResourceList:
    return {name: value for name, value in resources.items() if not value.is_zero()}
