"""The LimitRanger admission plugin (``plugin/pkg/admission/limitranger``): LimitRanges applied to new pods.

Mutating: each container without a request or limit for a resource gets the ``defaultRequest`` / ``default`` of
the namespace's ``Container`` items, and the pod is annotated ``kubernetes.io/limit-ranger: LimitRanger plugin
set: cpu, memory request for container c; …`` as kube does. Validating: every ``Container`` item's ``min``,
``max`` and ``maxLimitRequestRatio`` against each container (init containers too), every ``Pod`` item's against
the pod's summed requests and limits; a violation is 403 ``pods "x" is forbidden: maximum cpu usage per Container
is 500m, but limit is 1`` (several: kube's aggregate ``[a, b]``).

Like kube, only creation is concerned: containers' resources cannot change afterwards (subresources and
updates are skipped). New PersistentVolumeClaims are checked against the ``PersistentVolumeClaim`` items' ``min``
and ``max`` (``maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from apimachinery import errors
from apimachinery.quantity import Quantity
from apimachinery.quota import ResourceList, parse_list, pod_requests_and_limits

from .attributes import Attributes, Object
from .sources import Sources

ANNOTATION = "kubernetes.io/limit-ranger"


def _handles(sources: Sources, attrs: Attributes, resources: tuple[str, ...] = ("pods",)) -> bool:
    return (attrs.group == "" and attrs.resource in resources and not attrs.subresource
            and attrs.operation == "CREATE" and attrs.obj is not None
            and bool(sources.list("", "limitranges", attrs.namespace)))


def _items(sources: Sources, namespace: str, kind: str) -> list[Mapping[str, Any]]:
    return [item for limit_range in sources.list("", "limitranges", namespace)
            for item in (limit_range.get("spec") or {}).get("limits") or [] if item.get("type") == kind]


def merge_defaults(pod: Object, items: list[Mapping[str, Any]]) -> None:
    """``mergePodResourceRequirements``: defaults for what each container leaves out, and the annotation."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in items:
        requests.update(item.get("defaultRequest") or {})
        limits.update(item.get("default") or {})
    notes: list[str] = []
    spec = pod.get("spec") or {}
    for field, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(field) or []:
            resources = container.setdefault("resources", {})
            set_limits = _fill(resources, "limits", limits)
            set_requests = _fill(resources, "requests", requests)
            name = container.get("name", "")
            if set_requests:
                notes.append(f"{', '.join(sorted(set_requests))} request for {prefix} {name}")
            if set_limits:
                notes.append(f"{', '.join(sorted(set_limits))} limit for {prefix} {name}")
    if notes:
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _fill(resources: dict[str, Any], field: str, defaults: Mapping[str, Any]) -> list[str]:
    current = resources.get(field) or {}
    added = [name for name in defaults if name not in current]
    if added:
        resources[field] = {**current, **{name: defaults[name] for name in added}}
    return added


def min_constraint(kind: str, name: str, enforced: Quantity, requests: ResourceList,
                   limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if request is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if request < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request}"
    if limit is not None and limit < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit}"
    return None


def max_constraint(kind: str, name: str, enforced: Quantity, requests: ResourceList,
                   limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if limit is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if limit > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit}"
    if request is not None and request > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return None


def ratio_constraint(kind: str, name: str, enforced: Quantity, requests: ResourceList,
                     limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if request is None or request.is_zero():
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or "
                "request is 0")
    if limit is None or limit.is_zero():
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or "
                "limit is 0")
    observed = float(limit.exact / request.exact)
    if limit.exact / request.exact > enforced.exact:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {observed:f}"
    return None


CONSTRAINTS = (("min", min_constraint), ("max", max_constraint), ("maxLimitRequestRatio", ratio_constraint))


def _check(kind: str, item: Mapping[str, Any], requests: ResourceList, limits: ResourceList) -> list[str]:
    problems = []
    for field, constraint in CONSTRAINTS:
        for name, enforced in parse_list(item.get(field)).items():
            problem = constraint(kind, name, enforced, requests, limits)
            if problem is not None:
                problems.append(problem)
    return problems


def pod_violations(pod: Mapping[str, Any], items: list[Mapping[str, Any]]) -> list[str]:
    """``PodValidateLimitFunc``: each item's constraints, containers first for Container items."""
    problems: list[str] = []
    spec = pod.get("spec") or {}
    for item in items:
        if item.get("type") == "Container":
            for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
                resources = container.get("resources") or {}
                problems.extend(_check("Container", item, parse_list(resources.get("requests")),
                                       parse_list(resources.get("limits"))))
        elif item.get("type") == "Pod":
            problems.extend(_check("Pod", item, *pod_requests_and_limits(pod)))
    return problems


def max_request_constraint(kind: str, name: str, enforced: Quantity, requests: ResourceList) -> str | None:
    """``maxRequestConstraint``: a claim's request (it has no limit) against a max."""
    request = requests.get(name)
    if request is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if request > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return None


def claim_violations(claim: Mapping[str, Any], items: list[Mapping[str, Any]]) -> list[str]:
    """``PersistentVolumeClaimValidateLimitFunc``: each PersistentVolumeClaim item's min and max against the
    claim's requests."""
    kind = "PersistentVolumeClaim"
    requests = parse_list(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
    problems: list[str] = []
    for item in items:
        if item.get("type") != kind:
            continue
        for name, enforced in parse_list(item.get("min")).items():
            problems.append(min_constraint(kind, name, enforced, requests, {}) or "")
        for name, enforced in parse_list(item.get("max")).items():
            problems.append(max_request_constraint(kind, name, enforced, requests) or "")
    return [problem for problem in problems if problem]


def aggregate(problems: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message alone, several in brackets."""
    return problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"


class _LimitRanger:
    """What both halves share: the LimitRanges they read and the requests they concern."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def configured(self) -> bool:
        return bool(self.sources.cached("", "limitranges"))

    def concerns(self, group: str, resource: str) -> bool:
        return group == "" and resource == "pods"

    def handles(self, attrs: Attributes) -> bool:
        return _handles(self.sources, attrs)


class LimitRangerDefaults(_LimitRanger):
    """The mutating half: defaults from the namespace's Container items."""

    async def admit(self, attrs: Attributes) -> None:
        items = _items(self.sources, attrs.namespace, "Container")
        if not items or attrs.obj is None:
            return
        pod = copy.deepcopy(attrs.obj)
        merge_defaults(pod, items)
        attrs.obj = pod


class LimitRangerValidation(_LimitRanger):
    """The validating half: min, max and ratios, refused with kube's texts (new claims too)."""

    def handles(self, attrs: Attributes) -> bool:
        return _handles(self.sources, attrs, ("pods", "persistentvolumeclaims"))

    async def validate(self, attrs: Attributes) -> None:
        items = [item for limit_range in self.sources.list("", "limitranges", attrs.namespace)
                 for item in (limit_range.get("spec") or {}).get("limits") or []]
        violations = claim_violations if attrs.resource == "persistentvolumeclaims" else pod_violations
        problems = violations(attrs.obj or {}, items)
        if problems:
            raise errors.forbidden(attrs.resource, attrs.name, aggregate(problems))
