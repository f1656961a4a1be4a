"""Reading a CustomResourceDefinition: its versions, names and conditions (apiextensions' ``helpers.go``).

CRDs are plain dicts on the wire and in the stores; these accessors are the one place that knows their shape.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict, cast

from apimachinery.meta import now_rfc3339

Object = dict[str, Any]
GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"  # every custom resource's metadata


class Condition(TypedDict, total=False):
    type: str
    status: str
    lastTransitionTime: str
    reason: str
    message: str


def versions(crd: Object) -> list[Object]:
    return [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]


def storage_version(crd: Object) -> str:
    return next((v.get("name", "") for v in versions(crd) if v.get("storage")), "")


def served_versions(crd: Object) -> list[Object]:
    """Served versions, kube's discovery order: GA before beta before alpha, higher first, then by name."""
    return sorted((v for v in versions(crd) if v.get("served")), key=lambda v: version_priority(v.get("name", "")))


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key of ``version.CompareKubeAwareVersionStrings``: v2 < v1 < v1beta2 < v1beta1 < v1alpha1 < other."""
    m = _KUBE_VERSION.match(name)
    if m is None:
        return (3, 0, 0, name)
    major, stage, minor = int(m[1]), m[2], int(m[3] or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")


def condition(crd: Object, kind: str) -> Condition | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c  # type: ignore[no-any-return]
    return None


def is_true(crd: Object, kind: str) -> bool:
    c = condition(crd, kind)
    return c is not None and c.get("status") == "True"


def set_condition(crd: Object, new: Condition) -> None:
    """``SetCRDCondition``: replace the condition of that type, keeping its transition time if the status holds."""
    status = crd.setdefault("status", {})
    conditions: list[Condition] = status.setdefault("conditions", []) or []
    status["conditions"] = conditions
    for i, c in enumerate(conditions):
        if c.get("type") == new["type"]:
            if c.get("status") == new.get("status") and c.get("lastTransitionTime"):
                new = {**new, "lastTransitionTime": c["lastTransitionTime"]}
            elif not new.get("lastTransitionTime"):
                new = {**new, "lastTransitionTime": now_rfc3339()}
            conditions[i] = _ordered(new)
            return
    conditions.append(_ordered({**new, "lastTransitionTime": new.get("lastTransitionTime") or now_rfc3339()}))


def _ordered(c: Condition) -> Condition:
    return cast(Condition, {k: c[k] for k in ("type", "status", "lastTransitionTime", "reason", "message")
                            if k in c})


def version_of(crd: Object, name: str) -> Object | None:
    return next((v for v in versions(crd) if v.get("name") == name), None)


def schema_of(version: Object) -> Object:
    return ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
