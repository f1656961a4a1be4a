"""Container compute resources: which names are allowed, how requests relate to limits, and the QoS class.

Quantities are parsed with ``apimachinery.quantity``. One that does not parse is a *decoding* error in
Kubernetes — ``400 BadRequest`` ``Pod in version "v1" cannot be handled as a Pod: quantities must match the
regular expression …`` — so ``reject_unparsable`` raises that before defaulting, and validation only ever sees
quantities that parse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from apimachinery.errors import BadRequest, Cause
from apimachinery.quantity import Quantity, parse_quantity
from apimachinery.validation import IS_NEGATIVE_ERROR_MSG, Raw, forbidden, invalid, is_qualified_name, required

Object = dict[str, Any]

_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_QOS_RESOURCES = ("cpu", "memory")


def _parse(value: Any) -> Quantity:
    return parse_quantity(value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value))


def _is_huge_pages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_huge_pages(name)


def _is_integer_resource(name: str) -> bool:
    return _is_extended(name) or name in ("pods", "services", "secrets", "configmaps")


# --- decoding ---------------------------------------------------------------------------------------------


def resource_lists(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every ``limits``/``requests`` map of a PodSpec, plus ``overhead``."""
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(kind) or []:
            resources = container.get("resources") or {}
            for key in ("limits", "requests"):
                if resources.get(key):
                    yield resources[key]
    if spec.get("overhead"):
        yield spec["overhead"]


def reject_unparsable(lists: Iterator[Mapping[str, Any]], kind: str, version: str) -> None:
    """Raise the decoder's ``BadRequest`` for the first quantity that does not parse."""
    for resource_list in lists:
        for value in resource_list.values():
            try:
                _parse(value)
            except ValueError as err:
                raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {err}') from err


# --- validation -------------------------------------------------------------------------------------------


def validate_container_resource_name(name: str, path: str) -> list[Cause]:
    causes = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not _is_huge_pages(name):
            causes.append(invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_huge_pages(name):
            causes.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def validate_quantity_value(name: str, value: Any, path: str) -> list[Cause]:
    """``ValidateResourceQuantityValue``: not negative; whole numbers for integer resources."""
    try:
        quantity = _parse(value)
    except ValueError as err:
        return [invalid(path, str(value), str(err))]
    causes = []
    if quantity.milli_value() < 0:
        causes.append(invalid(path, quantity.canonical(), IS_NEGATIVE_ERROR_MSG))
    if _is_integer_resource(name) and quantity.milli_value() % 1000:
        causes.append(invalid(path, Raw(quantity.canonical()), "must be an integer"))
    return causes


def validate_resource_requirements(resources: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """Names and quantities of limits and requests; every request at most its limit."""
    resources = resources or {}
    limits: Mapping[str, Any] = resources.get("limits") or {}
    requests: Mapping[str, Any] = resources.get("requests") or {}
    causes: list[Cause] = []
    for name, value in limits.items():
        item = f"{path}.limits[{name}]"
        causes.extend(validate_container_resource_name(name, item))
        causes.extend(validate_quantity_value(name, value, item))
    for name, value in requests.items():
        item = f"{path}.requests[{name}]"
        causes.extend(validate_container_resource_name(name, item))
        causes.extend(validate_quantity_value(name, value, item))
        causes.extend(_request_within_limit(name, value, limits, path))
    has_cpu_or_memory = any(n in _QOS_RESOURCES for n in (*limits, *requests))
    if not has_cpu_or_memory and any(_is_huge_pages(n) for n in (*limits, *requests)):
        causes.append(forbidden(path, "HugePages require cpu or memory"))
    return causes


def _request_within_limit(name: str, value: Any, limits: Mapping[str, Any], path: str) -> list[Cause]:
    try:
        request = _parse(value)
        limit = _parse(limits[name]) if name in limits else None
    except ValueError:
        return []
    if limit is None:
        if not _overcommit_allowed(name):
            return [required(f"{path}.limits", "Limit must be set for non overcommitable resources")]
        return []
    if request.milli_value() != limit.milli_value() and not _overcommit_allowed(name):
        return [invalid(f"{path}.requests", request.canonical(),
                        f"must be equal to {name} limit of {limit.canonical()}")]
    if request.milli_value() > limit.milli_value():
        return [invalid(f"{path}.requests", request.canonical(),
                        f"must be less than or equal to {name} limit of {limit.canonical()}")]
    return []


# --- QoS --------------------------------------------------------------------------------------------------


def qos_class(spec: Mapping[str, Any]) -> str:
    """``qos.ComputePodQOS``: Guaranteed, Burstable or BestEffort from cpu/memory requests and limits."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for name, value in (resources.get("requests") or {}).items():
            milli = _milli_or_zero(value)
            if name in _QOS_RESOURCES and milli > 0:
                requests[name] = requests.get(name, 0) + milli
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            milli = _milli_or_zero(value)
            if name in _QOS_RESOURCES and milli > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + milli
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (guaranteed and all(limits.get(name) == value for name, value in requests.items())
            and len(requests) == len(limits)):
        return "Guaranteed"
    return "Burstable"


def _milli_or_zero(value: Any) -> int:
    try:
        return int(_parse(value).milli_value())
    except ValueError:
        return 0
