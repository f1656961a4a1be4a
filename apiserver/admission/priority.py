"""The Priority admission plugin (``plugin/pkg/admission/priority``), always on as in kube-apiserver.

Mutating, on pods: a new pod's ``priorityClassName`` becomes ``spec.priority`` and ``spec.preemptionPolicy``
(no class: the globalDefault class's, else priority 0 and ``PreemptLowerPriority``); an unknown class is 403
``no PriorityClass with name X was found``, a ``spec.priority`` or ``spec.preemptionPolicy`` the user gave that
disagrees with the class is 403 too. An update keeps the priority and policy the stored pod has.

Validating, on PriorityClasses: a second ``globalDefault`` is 403 ``PriorityClass X is already marked as default.
Only one default can exist``.

Cost: pod creates are the hot path, so ``admit`` changes the new pod in place (the store re-defaults and
re-validates only an object a plugin replaced, and what this plugin sets is valid by construction) and reads the
classes from the watch cache, the default one cached until the cache's revision moves.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from apimachinery import errors

from .attributes import Attributes
from .sources import Sources

GROUP, RESOURCE = "scheduling.k8s.io", "priorityclasses"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"


class Priority:
    """Both halves of the plugin; the chain lists the same instance as mutating and as validating."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self._default: tuple[int, Mapping[str, Any] | None] = (-1, None)

    def configured(self) -> bool:
        return True  # always on: every pod gets a priority

    def concerns(self, group: str, resource: str) -> bool:
        return (group, resource) in (("", "pods"), (GROUP, RESOURCE))

    def handles(self, attrs: Attributes) -> bool:
        if attrs.group == "" and attrs.resource == "pods":
            return not attrs.subresource and attrs.operation in ("CREATE", "UPDATE") and attrs.obj is not None
        return attrs.group == GROUP and attrs.resource == RESOURCE and attrs.operation in ("CREATE", "UPDATE")

    def default_class(self) -> Mapping[str, Any] | None:
        """``getDefaultPriorityClass``: of the globalDefault classes, the one with the lowest value."""
        revision = self.sources.revision(GROUP, RESOURCE)
        if self._default[0] != revision:
            defaults = [pc for pc in self.sources.list(GROUP, RESOURCE) if pc.get("globalDefault")]
            self._default = (revision, min(defaults, key=lambda pc: pc.get("value") or 0) if defaults else None)
        return self._default[1]

    # --- pods -----------------------------------------------------------------------------------------------
    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource != "pods" or attrs.obj is None:
            return
        if attrs.operation == "UPDATE":
            self._keep_priority(attrs)
            return
        spec = attrs.obj.setdefault("spec", {})
        class_name = spec.get("priorityClassName") or ""
        if not class_name:
            default = self.default_class()
            if default is not None:
                spec["priorityClassName"] = class_name = default["metadata"]["name"]
            priority = int(default.get("value") or 0) if default is not None else 0
            policy = default.get("preemptionPolicy") if default is not None else DEFAULT_PREEMPTION_POLICY
        else:
            found = self.sources.get(GROUP, RESOURCE, None, class_name)
            if found is None:
                raise errors.forbidden(attrs.resource, attrs.name,
                                       f"no PriorityClass with name {class_name} was found")
            priority, policy = int(found.get("value") or 0), found.get("preemptionPolicy")
        if spec.get("priority") is not None and spec["priority"] != priority:
            raise errors.forbidden(attrs.resource, attrs.name,
                                   f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                                   f"spec; priority admission controller computed {priority} from the given "
                                   "PriorityClass name")
        spec["priority"] = priority
        if policy is not None:
            given = spec.get("preemptionPolicy")
            if given is not None and given != policy:
                raise errors.forbidden(attrs.resource, attrs.name,
                                       f"the string value of PreemptionPolicy ({given}) must not be provided in pod "
                                       f"spec; priority admission controller computed {policy} from the given "
                                       "PriorityClass name")
            spec["preemptionPolicy"] = policy

    @staticmethod
    def _keep_priority(attrs: Attributes) -> None:
        """An update without ``spec.priority``/``preemptionPolicy`` keeps the stored ones (validation refuses any
        other change to them)."""
        new_spec, old_spec = (attrs.obj or {}).get("spec") or {}, (attrs.old or {}).get("spec") or {}
        missing = [f for f in ("priority", "preemptionPolicy")
                   if new_spec.get(f) is None and old_spec.get(f) is not None]
        if missing:
            pod = copy.deepcopy(attrs.obj or {})
            for field in missing:
                pod.setdefault("spec", {})[field] = old_spec[field]
            attrs.obj = pod

    # --- priority classes -----------------------------------------------------------------------------------
    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource != RESOURCE or not (attrs.obj or {}).get("globalDefault"):
            return
        default = self.default_class()
        if default is None:
            return
        name = default["metadata"]["name"]
        if attrs.operation == "CREATE" or name != attrs.name:
            raise errors.forbidden(attrs.resource, attrs.name,
                                   f"PriorityClass {name} is already marked as default. Only one default can exist",
                                   group=GROUP)
