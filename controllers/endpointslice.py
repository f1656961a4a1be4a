"""The EndpointSlice controller (``pkg/controller/endpointslice``): a selecting Service's endpoints as slices.

``sync(namespace/name)`` reads the caches and, for a Service with a selector (not ``ExternalName``):

* ``desired_slices``: for each of the Service's IP families, every matching pod with an IP that has not finished
  is one endpoint — its address, ``conditions`` (``serving`` = the pod's Ready condition, ``terminating`` = being
  deleted, ``ready`` = serving and not terminating, or always with ``publishNotReadyAddresses``), ``nodeName``,
  ``targetRef`` to the pod; endpoints with the same resolved ports share slices of at most
  ``max_endpoints_per_slice``; a Service without endpoints keeps one empty placeholder slice;
* the slices this controller manages for the Service (labels ``kubernetes.io/service-name`` and
  ``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``) are reused in order — updated only
  when they differ — new ones created as ``<service>-<random>`` with a controller ownerReference to the Service,
  surplus ones deleted.

A deleted Service's slices are the garbage collector's (ownerReferences), as in Kubernetes. Because new slices get
generated names, a sync must not act on a cache that has not yet seen this controller's own writes, or it would
create a slice twice: ``SliceTracker`` remembers each write's resourceVersion (and each delete) until the informer
catches up, and a sync that finds the cache behind tries again shortly (``EndpointSliceTracker.StaleSlices``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from apimachinery.errors import Forbidden, NotFound
from apimachinery.meta import Object
from kubeclient import ENDPOINT_SLICES, NAMESPACE_INDEX, Clientset, DeletedFinalStateUnknown, InformerFactory

from controllers.base import unwrap
from controllers.endpoints import endpoints_labels
from controllers.endpointutil import (
    ServicePodsController,
    find_port,
    hostname,
    pod_ip,
    service_families,
    service_selector,
    should_pod_be_in_endpoints,
    target_ref,
)
from controllers.podutil import controller_ref, is_pod_ready, meta
from controllers.serviceaccount import is_namespace_terminating

log = logging.getLogger(__name__)

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
MAX_ENDPOINTS_PER_SLICE = 100
STALE_RETRY_SECONDS = 0.05

# (addressType, ports, endpoints) of one slice.
DesiredSlice = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def slice_endpoint(pod: Object, service: Object, ip: str) -> dict[str, Any]:
    """``podToEndpoint``."""
    serving = is_pod_ready(pod)
    terminating = bool(meta(pod).get("deletionTimestamp"))
    ready = bool((service.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    endpoint: dict[str, Any] = {"addresses": [ip],
                                "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
                                "targetRef": target_ref(pod)}
    if node := (pod.get("spec") or {}).get("nodeName"):
        endpoint["nodeName"] = node
    if name := hostname(pod, service):
        endpoint["hostname"] = name
    return endpoint


def slice_port(service_port: dict[str, Any], number: int) -> dict[str, Any]:
    port: dict[str, Any] = {"name": service_port.get("name") or "", "port": number,
                            "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("appProtocol") is not None:
        port["appProtocol"] = service_port["appProtocol"]
    return port


def desired_slices(service: Object, pods: Iterable[Object],
                   max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> list[DesiredSlice]:
    """The slices the Service should have (see the module docstring), pods in name order."""
    ordered = sorted(pods, key=lambda p: meta(p).get("name") or "")
    slices: list[DesiredSlice] = []
    for family in service_families(service):
        groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for pod in ordered:
            ip = pod_ip(pod, family)
            if ip is None or not should_pod_be_in_endpoints(pod, True):
                continue
            ports = [slice_port(sp, n) for sp in (service.get("spec") or {}).get("ports") or []
                     if (n := find_port(pod, sp)) is not None]
            groups.setdefault(repr(ports), (ports, []))[1].append(slice_endpoint(pod, service, ip))
        if not groups:
            slices.append((family, [], []))
        for ports, endpoints in groups.values():
            slices.extend((family, ports, endpoints[i:i + max_endpoints_per_slice])
                          for i in range(0, len(endpoints), max_endpoints_per_slice))
    return slices


def slice_labels(service: Object) -> dict[str, str]:
    """The Service's labels (but the reserved ones), the headless mark, service name and manager."""
    labels = {k: v for k, v in endpoints_labels(service).items() if k not in (LABEL_SERVICE_NAME, LABEL_MANAGED_BY)}
    return {**labels, LABEL_SERVICE_NAME: meta(service)["name"], LABEL_MANAGED_BY: CONTROLLER_NAME}


def is_managed(slice_: Object) -> bool:
    return (meta(slice_).get("labels") or {}).get(LABEL_MANAGED_BY) == CONTROLLER_NAME


class SliceTracker:
    """This controller's writes the slice cache has not shown yet: service key → slice name → the resourceVersion
    written (None: deleted)."""

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


class EndpointSliceController(ServicePodsController):
    name = "endpointslice-controller"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> None:
        super().__init__(clientset, factory, workers=workers)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.tracker = SliceTracker()
        self.slice_informer = factory.informer(ENDPOINT_SLICES)
        self.informers.append(self.slice_informer)
        self.slice_informer.add_event_handler(self._slice_changed, lambda old, new: self._slice_changed(new),
                                              self._slice_deleted)

    def _service_key(self, slice_: Object) -> str | None:
        service = (meta(slice_).get("labels") or {}).get(LABEL_SERVICE_NAME)
        return f"{meta(slice_).get('namespace')}/{service}" if service and is_managed(slice_) else None

    def _slice_changed(self, obj: Object) -> None:
        """A managed slice changed (by us, or by someone else: then it is put back)."""
        if key := self._service_key(obj):
            self.queue.add(key)

    def _slice_deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        slice_ = unwrap(obj)
        if key := self._service_key(slice_):
            self.tracker.forget(key, meta(slice_).get("name"))
            self.queue.add(key)

    def managed_slices(self, namespace: str, service_name: str) -> list[Object]:
        return sorted((s for s in self.slice_informer.indexer.by_index(NAMESPACE_INDEX, namespace)
                       if is_managed(s) and (meta(s).get("labels") or {}).get(LABEL_SERVICE_NAME) == service_name),
                      key=lambda s: meta(s).get("name") or "")

    async def sync(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        service = self.service(key)
        if service is None:
            self.tracker.forget(key)
            return
        selector = service_selector(service)
        if selector is None:
            return
        existing = self.managed_slices(namespace, name)
        if self.tracker.stale(key, {meta(s)["name"]: s for s in existing}):
            self.queue.add_after(key, STALE_RETRY_SECONDS)
            return
        desired = desired_slices(service, self.selected_pods(service, selector), self.max_endpoints_per_slice)
        labels, owner = slice_labels(service), controller_ref(service, "v1", "Service")
        for address_type, ports, endpoints in desired:
            reuse = _take(existing, address_type, ports)
            body = {"addressType": address_type, "endpoints": endpoints, "ports": ports}
            if reuse is None:
                await self._create(key, service, {"metadata": {"generateName": f"{name}-", "labels": labels,
                                                               "ownerReferences": [owner]}, **body})
            elif any(reuse.get(k) != v for k, v in body.items()) or meta(reuse).get("labels") != labels or \
                    meta(reuse).get("ownerReferences") != [owner]:
                updated = {**reuse, **body, "metadata": {**meta(reuse), "labels": labels, "ownerReferences": [owner]}}
                self.tracker.wrote(key, await self.clientset.endpoint_slices.update(updated))
        for surplus in existing:
            try:
                await self.clientset.endpoint_slices.delete(meta(surplus)["name"], namespace)
            except NotFound:
                pass
            self.tracker.deleted(key, meta(surplus)["name"])

    async def _create(self, key: str, service: Object, slice_: Object) -> None:
        try:
            created = await self.clientset.endpoint_slices.create(slice_, meta(service)["namespace"])
        except Forbidden as err:
            if is_namespace_terminating(err):
                return
            raise
        self.tracker.wrote(key, created)
        log.info("created endpointslice %s/%s", meta(created).get("namespace"), meta(created).get("name"))


def _take(existing: list[Object], address_type: str, ports: list[dict[str, Any]]) -> Object | None:
    """The first existing slice of this address type, preferring one that already has these ports; removed from
    ``existing``."""
    same_type = [s for s in existing if s.get("addressType") == address_type]
    for candidate in [s for s in same_type if (s.get("ports") or []) == ports] + same_type:
        existing.remove(candidate)
        return candidate
    return None
