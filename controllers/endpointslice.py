"""The EndpointSlice controller (``pkg/controller/endpointslice``): a selecting Service's endpoints as slices.

``sync(namespace/name)`` reads the caches and, for a Service with a selector (not ``ExternalName``):

* ``desired_slices``: for each of the Service's IP families, every matching pod with an IP that has not finished
  is one endpoint — its address, ``conditions`` (``serving`` = the pod's Ready condition, ``terminating`` = being
  deleted, ``ready`` = serving and not terminating, or always with ``publishNotReadyAddresses``), ``nodeName``,
  ``targetRef`` to the pod; endpoints with the same resolved ports share slices of at most
  ``max_endpoints_per_slice``; a Service without endpoints keeps one empty placeholder slice;
* ``SliceWriter`` brings the slices this controller manages for the Service (managed-by
  ``endpointslice-controller.k8s.io``) to those, as ``<service>-<random>`` with the Service's labels and a
  controller ownerReference to it.

A deleted Service's slices are the garbage collector's (ownerReferences), as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apimachinery.meta import Object
from controllers.endpoints import endpoints_labels
from controllers.support.endpointutil import (
    ServicePodsController,
    find_port,
    hostname,
    pod_ip,
    service_families,
    service_selector,
    should_pod_be_in_endpoints,
    target_ref,
)
from controllers.support.podutil import controller_ref, is_pod_ready, meta
from controllers.support.slicewriter import STALE_RETRY_SECONDS, DesiredSlice, SliceWriter, chunked, managed_labels
from kubeclient import ENDPOINT_SLICES, Clientset, InformerFactory

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100


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
        slices.extend(chunked(family, groups.values(), max_endpoints_per_slice))
    return slices


def slice_labels(service: Object) -> dict[str, str]:
    """The Service's labels, the headless mark, the service name and this controller as manager."""
    return managed_labels(endpoints_labels(service), meta(service)["name"], CONTROLLER_NAME)


class EndpointSliceController(ServicePodsController):
    name = "endpointslice-controller"
    queue_name = "endpoint_slice"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> None:
        super().__init__(clientset, factory, workers=workers)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        slice_informer = factory.informer(ENDPOINT_SLICES)
        self.informers.append(slice_informer)
        self.writer = SliceWriter(clientset, slice_informer, CONTROLLER_NAME, self.queue)

    async def sync(self, key: str) -> None:
        service = self.service(key)
        if service is None:
            self.writer.forget(key)
            return
        selector = service_selector(service)
        if selector is None:
            return
        desired = desired_slices(service, self.selected_pods(service, selector), self.max_endpoints_per_slice)
        metadata = {"labels": slice_labels(service), "ownerReferences": [controller_ref(service, "v1", "Service")]}
        if not await self.writer.apply(key, desired, metadata):
            self.queue.add_after(key, STALE_RETRY_SECONDS)
