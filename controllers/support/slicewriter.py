"""Writing a Service's EndpointSlices: what the endpointslice and endpointslicemirroring controllers share.

Each controller manages the slices labelled ``endpointslice.kubernetes.io/managed-by: <its name>`` and
``kubernetes.io/service-name: <service>``; ``SliceWriter.apply`` brings them to the desired ones: existing slices
are reused in name order (preferring one with the same address type and ports), updated only when they differ, new
ones created as ``<service>-<random>``, surplus ones deleted. The writer's informer handlers enqueue the Service of a
managed slice that changed or went (so a slice someone else edited or deleted is put back).

Because new slices get generated names, a sync must not act on a cache that has not yet seen this controller's own
writes, or it would create a slice twice: ``SliceTracker`` remembers each write's resourceVersion (and each delete)
until the informer shows it, and ``apply`` refuses to act while the cache is behind (the caller tries again
shortly), as Kubernetes' ``EndpointSliceTracker.StaleSlices`` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from apimachinery.errors import Forbidden, NotFound
from apimachinery.meta import Object
from controllers.support.base import is_namespace_terminating, unwrap
from controllers.support.podutil import meta
from kubeclient import NAMESPACE_INDEX, Clientset, DeletedFinalStateUnknown, RateLimitingQueue
from kubeclient.informer import SharedInformer

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
STALE_RETRY_SECONDS = 0.05

# (addressType, ports, endpoints) of one slice.
DesiredSlice = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def managed_labels(labels: dict[str, str], service_name: str, manager: str) -> dict[str, str]:
    """``labels`` with the service name and the managing controller set over whatever they said."""
    return {**labels, LABEL_SERVICE_NAME: service_name, LABEL_MANAGED_BY: manager}


def chunked(address_type: str, groups: Iterable[tuple[list[dict[str, Any]], list[dict[str, Any]]]],
            max_endpoints: int) -> list[DesiredSlice]:
    """Endpoints grouped by their ports, in slices of at most ``max_endpoints``."""
    return [(address_type, ports, endpoints[i:i + max_endpoints])
            for ports, endpoints in groups for i in range(0, len(endpoints), max_endpoints)]


class SliceTracker:
    """Writes the slice cache has not shown yet: service key → slice name → resourceVersion written (None: deleted)."""

    def __init__(self) -> None:
        self._writes: dict[str, dict[str, int | None]] = {}

    def wrote(self, service_key: str, slice_: Object) -> None:
        self._writes.setdefault(service_key, {})[meta(slice_)["name"]] = int(meta(slice_)["resourceVersion"])

    def deleted(self, service_key: str, name: str) -> None:
        self._writes.setdefault(service_key, {})[name] = None

    def forget(self, service_key: str, name: str | None = None) -> None:
        if name is None:
            self._writes.pop(service_key, None)
        else:
            self._writes.get(service_key, {}).pop(name, None)

    def stale(self, service_key: str, cached: dict[str, Object]) -> bool:
        """Whether ``cached`` (the service's slices by name) misses one of the writes; forgets the seen ones."""
        writes = self._writes.get(service_key, {})
        for name, rv in list(writes.items()):
            current = cached.get(name)
            seen = current is None if rv is None else (
                current is not None and int(meta(current).get("resourceVersion") or 0) >= rv)
            if seen:
                del writes[name]
        return bool(writes)


class SliceWriter:
    """The slices one controller (``manager``, its managed-by value) keeps; see the module docstring."""

    def __init__(self, clientset: Clientset, informer: SharedInformer, manager: str,
                 queue: RateLimitingQueue[str]) -> None:
        self.clientset = clientset
        self.informer = informer
        self.manager = manager
        self.queue = queue
        self.tracker = SliceTracker()
        informer.add_event_handler(self._changed, lambda old, new: self._changed(new), self._deleted)

    def _service_key(self, slice_: Object) -> str | None:
        labels = meta(slice_).get("labels") or {}
        if labels.get(LABEL_MANAGED_BY) != self.manager or not labels.get(LABEL_SERVICE_NAME):
            return None
        return f"{meta(slice_).get('namespace')}/{labels[LABEL_SERVICE_NAME]}"

    def _changed(self, obj: Object) -> None:
        if key := self._service_key(obj):
            self.queue.add(key)

    def _deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        slice_ = unwrap(obj)
        if key := self._service_key(slice_):
            self.tracker.forget(key, meta(slice_).get("name"))
            self.queue.add(key)

    def managed(self, namespace: str, service_name: str) -> list[Object]:
        return sorted((s for s in self.informer.indexer.by_index(NAMESPACE_INDEX, namespace)
                       if self._service_key(s) == f"{namespace}/{service_name}"),
                      key=lambda s: meta(s).get("name") or "")

    def forget(self, key: str) -> None:
        self.tracker.forget(key)

    async def apply(self, key: str, desired: list[DesiredSlice], metadata: dict[str, Any]) -> bool:
        """Make the managed slices of ``key`` (``namespace/service``) the ``desired`` ones, each with ``metadata``
        (labels, ownerReferences, annotations); False, doing nothing, while the cache is behind our writes."""
        namespace, name = key.split("/", 1)
        existing = self.managed(namespace, name)
        if self.tracker.stale(key, {meta(s)["name"]: s for s in existing}):
            return False
        for address_type, ports, endpoints in desired:
            reuse = _take(existing, address_type, ports)
            body = {"addressType": address_type, "endpoints": endpoints, "ports": ports}
            if reuse is None:
                await self._create(key, {"metadata": {"generateName": f"{name}-", **metadata}, **body})
            elif any(reuse.get(k) != v for k, v in body.items()) or \
                    any(meta(reuse).get(k) != v for k, v in metadata.items()):
                updated = {**reuse, **body, "metadata": {**meta(reuse), **metadata}}
                self.tracker.wrote(key, await self.clientset.endpoint_slices.update(updated))
        for surplus in existing:
            with contextlib.suppress(NotFound):
                await self.clientset.endpoint_slices.delete(meta(surplus)["name"], namespace)
            self.tracker.deleted(key, meta(surplus)["name"])
        return True

    async def _create(self, key: str, slice_: Object) -> None:
        try:
            created = await self.clientset.endpoint_slices.create(slice_, key.split("/", 1)[0])
        except Forbidden as err:
            if is_namespace_terminating(err):
                return
            raise
        self.tracker.wrote(key, created)


def _take(existing: list[Object], address_type: str, ports: list[dict[str, Any]]) -> Object | None:
    """The first existing slice of this address type, preferring one that already has these ports; removed from
    ``existing``."""
    same_type = [s for s in existing if s.get("addressType") == address_type]
    for candidate in [s for s in same_type if (s.get("ports") or []) == ports] + same_type:
        existing.remove(candidate)
        return candidate
    return None
