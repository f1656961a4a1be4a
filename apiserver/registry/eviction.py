"""Evictions that respect PodDisruptionBudgets (kube-apiserver's ``EvictionREST``).

``POST pods/{name}/eviction`` deletes the pod only when its budget allows, in this order:

1. a pod that cannot disrupt anything more (Succeeded, Failed, Pending, already terminating) is deleted without
   looking at budgets (``canIgnorePDB``);
2. the budgets that select the pod (``apimachinery.disruption.selects``): none → delete; more than one → 500,
   as eviction supports only one;
3. a pod that is not Ready does not count towards the budget: ``AlwaysAllow`` deletes it, ``IfHealthyBudget``
   (the default) only while ``currentHealthy >= desiredHealthy > 0``; both delete on the pod's
   resourceVersion, so a pod that became Ready meanwhile is not taken;
4. otherwise ``checkAndDecrement``: a budget the controller has not seen yet, or with ``disruptionsAllowed``
   0, is a 429 TooManyRequests with cause ``DisruptionBudget`` (clients such as ``kubectl drain`` retry); else
   one status write on the budget's read revision both decrements ``disruptionsAllowed`` and records the pod in
   ``disruptedPods`` (the controller then counts it as gone for two minutes even before the delete shows), and
   only then the pod is deleted. A conflicting write re-reads the budget and decides again.

Before deleting, the pod gets the ``DisruptionTarget`` condition (reason ``EvictionByEvictionAPI``). With dryRun
nothing is written.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from dataclasses import replace

from apimachinery import errors
from apimachinery.disruption import selects, update_disruption_allowed
from apimachinery.errors import Cause
from apimachinery.meta import now_rfc3339

from ..storage.cacher import ObjectFilter
from .store import MAX_UPDATE_ATTEMPTS, DeleteOptions, ResourceStore
from .strategy import Object

MAX_DISRUPTED_POD_SIZE = 2000
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def can_ignore_pdb(pod: Object) -> bool:
    """A terminal, pending or terminating pod disrupts nothing more: no budget is checked (``canIgnorePDB``)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def is_pod_ready(pod: Object) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def matching_pdbs(pdbs: Iterable[Object], pod: Object) -> list[Object]:
    return [pdb for pdb in pdbs if selects(pdb, pod)]


def too_many_requests(message: str) -> errors.TooManyRequests:
    return errors.TooManyRequests(VIOLATION, causes=[Cause(DISRUPTION_BUDGET_CAUSE, message)])


def _forbidden(name: str, why: str) -> errors.Forbidden:
    return errors.forbidden("poddisruptionbudget", name, why, "policy")


def decremented(pdb: Object, pod_name: str, dry_run: bool) -> Object:
    """``checkAndDecrement``: the budget after this eviction, or the error that refuses it."""
    name, status = pdb["metadata"]["name"], pdb.get("status") or {}
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise too_many_requests(f"The disruption budget {name} is still being processed by the server.")
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise _forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        raise too_many_requests(f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                                f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently")
    new = copy.deepcopy(pdb)
    status = new.setdefault("status", {})
    status["disruptionsAllowed"] = allowed - 1
    if allowed == 1:
        update_disruption_allowed(status)
    if not dry_run:
        status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now_rfc3339()}
    return new


class Evictor:
    """The eviction of one pod against the pod and budget stores (see the module docstring)."""

    def __init__(self, pods: ResourceStore, pdbs: ResourceStore | None) -> None:
        self.pods = pods
        self.pdbs = pdbs

    async def evict(self, namespace: str, name: str, options: DeleteOptions) -> None:
        pod = (await self.pods.get(namespace, name)).obj
        if not can_ignore_pdb(pod):
            pdbs = await self._budgets(namespace, pod)
            if len(pdbs) > 1:
                raise errors.InternalError(f"Internal error occurred: {MULTIPLE_PDBS}",
                                           causes=[Cause("", MULTIPLE_PDBS)])
            if pdbs and await self._take_budget(pdbs[0], pod, options.dry_run) and options.precondition_rv is None:
                options = replace(options, precondition_rv=pod["metadata"].get("resourceVersion"))
        options = await self._mark_disruption_target(namespace, name, options)
        await self.pods.delete(namespace, name, options)

    async def _budgets(self, namespace: str, pod: Object) -> list[Object]:
        if self.pdbs is None:
            return []
        await self.pdbs.cache.wait_fresh()
        return matching_pdbs((co.obj for co in self.pdbs.cache.list(ObjectFilter(namespace))), pod)

    async def _take_budget(self, pdb: Object, pod: Object, dry_run: bool) -> bool:
        """Decrement the budget for ``pod`` (a 429 when it cannot); True when the delete must be made on the pod's
        resourceVersion (a not-Ready pod taken without decrementing)."""
        assert self.pdbs is not None
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        if not is_pod_ready(pod):
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                return True
            desired = int(status.get("desiredHealthy") or 0)
            if int(status.get("currentHealthy") or 0) >= desired > 0:
                return True
        namespace, name = pdb["metadata"]["namespace"], pdb["metadata"]["name"]
        for _ in range(MAX_UPDATE_ATTEMPTS):
            co = await self.pdbs.get(namespace, name)
            new = decremented(co.obj, pod["metadata"]["name"], dry_run)
            if dry_run:
                return False
            try:
                await self.pdbs.guaranteed_update(namespace, name, functools.partial(_replaced_by, new),
                                                  subresource="status", precondition_rv=str(co.rv))
                return False
            except errors.Conflict:
                continue
        raise errors.conflict("poddisruptionbudgets", name, "policy", "too many concurrent updates; try again")

    async def _mark_disruption_target(self, namespace: str, name: str, options: DeleteOptions) -> DeleteOptions:
        """The DisruptionTarget condition, on the pod's current version; a resourceVersion precondition follows
        the pod to the version this write made."""
        if options.dry_run:
            return options

        def mark(pod: Object) -> Object:
            if pod["metadata"].get("deletionTimestamp") or \
                    (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return pod
            conditions = [c for c in (pod.setdefault("status", {}).get("conditions") or [])
                          if c.get("type") != "DisruptionTarget"]
            conditions.append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now_rfc3339(), "reason": "EvictionByEvictionAPI",
                               "message": "Eviction API: evicting"})
            pod["status"]["conditions"] = conditions
            return pod

        co = await self.pods.guaranteed_update(namespace, name, mark, subresource="status",
                                               precondition_rv=options.precondition_rv)
        if options.precondition_rv is None:
            return options
        return replace(options, precondition_rv=str(co.rv))


def _replaced_by(new: Object, _current: Object) -> Object:
    """A guaranteed update's function that writes ``new`` (its precondition guards against a newer current)."""
    return new
