"""The namespace controller (``pkg/controller/namespace``): empty a deleted namespace, then let it go.

``kubectl delete namespace x`` only marks it: the apiserver sets ``deletionTimestamp`` and phase
``Terminating`` and keeps it while ``spec.finalizers`` holds ``kubernetes``.  ``sync(name)`` then:

1. discovers every namespaced resource that can be listed and deleted (``/api/v1``, ``/apis/*``), so
   resources this controller was not written for are emptied too;
2. deletes their objects in the namespace (``deletecollection`` when served, else one by one);
3. while something remains (pods finishing a graceful deletion, objects held by finalizers) records why in
   the ``NamespaceContentRemaining`` / ``NamespaceFinalizersRemaining`` conditions and looks again shortly;
4. when nothing remains, removes ``kubernetes`` from ``spec.finalizers`` through ``namespaces/{name}/finalize``
   — and the apiserver deletes the namespace.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections import Counter
from typing import Any

from apimachinery.errors import MethodNotAllowed, NotFound, StatusError
from apimachinery.meta import Object
from controllers.support.base import Controller
from controllers.support.discovery import discover
from controllers.support.podutil import fmt_time, get_condition, meta, now_utc
from kubeclient import NAMESPACES, Clientset, InformerFactory, Resource

log = logging.getLogger(__name__)

FINALIZER = "kubernetes"
RECHECK_SECONDS = 2.0


async def discover_namespaced(clientset: Clientset) -> list[Resource]:
    """Every namespaced resource the apiserver can list and delete (no subresources)."""
    return [r for r in await discover(clientset, frozenset({"list", "delete"})) if r.namespaced]


class NamespaceController(Controller):
    name = "namespace-controller"
    queue_name = "namespace"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 10) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.ns_informer = factory.informer(NAMESPACES)
        self.informers = [self.ns_informer]
        self.ns_informer.add_event_handler(self._changed, lambda old, new: self._changed(new))

    def _changed(self, ns: Object) -> None:
        if meta(ns).get("deletionTimestamp"):
            self.enqueue(ns)

    async def sync(self, key: str) -> None:
        cached = self.ns_informer.indexer.get_by_key(key)
        if cached is None or not meta(cached).get("deletionTimestamp"):
            return
        if FINALIZER not in ((cached.get("spec") or {}).get("finalizers") or []):
            return
        remaining, finalizers = await self._delete_content(key)
        if remaining:
            await self._report(cached, remaining, finalizers)
            self.queue.add_after(key, RECHECK_SECONDS)
            return
        ns = copy.deepcopy(cached)
        ns["spec"]["finalizers"] = [f for f in ns["spec"]["finalizers"] if f != FINALIZER]
        try:
            await self.clientset.rest.request("PUT", NAMESPACES.path(None, key, "finalize"), body=ns)
        except NotFound:
            return
        log.info("namespace %s is empty; finalized", key)

    async def _delete_content(self, namespace: str) -> tuple[Counter[str], Counter[str]]:
        """Delete everything in ``namespace``; return what is still there, and the finalizers holding it."""
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        for resource in await discover_namespaced(self.clientset):
            client = self.clientset.resource(resource)
            try:
                items = (await client.list(namespace)).get("items") or []
            except NotFound:  # no longer served since discovery (its CRD just went): nothing of it remains
                continue
            if not items:
                continue
            if any(not meta(i).get("deletionTimestamp") for i in items):
                await self._delete_all(resource, namespace, items)
                items = (await client.list(namespace)).get("items") or []
            label = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
            remaining[label] += len(items)
            for item in items:
                for finalizer in meta(item).get("finalizers") or []:
                    finalizers[finalizer] += 1
        return remaining, finalizers

    async def _delete_all(self, resource: Resource, namespace: str, items: list[Object]) -> None:
        if "deletecollection" in resource.subresources:
            try:
                await self.clientset.rest.request("DELETE", resource.path(namespace))
                return
            except MethodNotAllowed:
                pass
        client = self.clientset.resource(resource)
        for item in items:
            if meta(item).get("deletionTimestamp"):
                continue
            with contextlib.suppress(NotFound):
                await client.delete(meta(item)["name"], namespace)

    async def _report(self, ns: Object, remaining: Counter[str], finalizers: Counter[str]) -> None:
        """The Terminating namespace's conditions say what it waits for (as ``kubectl describe ns`` shows)."""
        status: dict[str, Any] = copy.deepcopy(ns.get("status") or {})
        content = "Some resources are remaining: " + ", ".join(
            f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
        held = "Some content in the namespace has finalizers remaining: " + ", ".join(
            f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
        wanted = [("NamespaceContentRemaining", "True", "SomeResourcesRemain", content)]
        wanted.append(("NamespaceFinalizersRemaining", "True" if finalizers else "False",
                       "SomeFinalizersRemain" if finalizers else "ContentHasNoFinalizers",
                       held if finalizers else "All content-preserving finalizers finished"))
        changed = False
        for kind, value, reason, message in wanted:
            current = get_condition(status, kind)
            if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == \
                    (value, reason, message):
                continue
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]
            status["conditions"].append({"type": kind, "status": value, "reason": reason, "message": message,
                                         "lastTransitionTime": fmt_time(now_utc())})
            changed = True
        if changed:
            try:
                await self.clientset.namespaces.update_status({**ns, "status": status})
            except StatusError as err:
                log.debug("namespace %s: status not written: %s", meta(ns)["name"], err)
