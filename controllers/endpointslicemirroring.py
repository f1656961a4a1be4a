"""The EndpointSlice mirroring controller (``pkg/controller/endpointslicemirroring``): Endpoints written by hand
for a Service without selector, mirrored as EndpointSlices — what ``kubectl describe svc`` (1.32) and every slice
consumer read.

``sync(namespace/name)`` (the Endpoints' key, which is the Service's) mirrors when a Service of that name exists
without selector and the Endpoints are not labelled ``endpointslice.kubernetes.io/skip-mirror: "true"`` (as
``default/kubernetes``' are) nor carry the leader-election annotation; otherwise it removes its slices.
``mirrored_slices``: each address becomes an endpoint (IP, ``conditions.ready`` = whether it was under
``addresses``, hostname, nodeName, targetRef); addresses of one family with the same ports share slices; at most
1000 addresses are mirrored. The slices carry the Endpoints' labels and annotations (but
``last-applied-configuration`` and the trigger time), ``managed-by: endpointslicemirroring-controller.k8s.io`` and a
controller ownerReference to the Endpoints, so the garbage collector removes them with it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from apimachinery.meta import Object
from controllers.endpoints import LEADER_ANNOTATION
from controllers.support.base import Controller
from controllers.support.podutil import controller_ref, meta
from controllers.support.slicewriter import STALE_RETRY_SECONDS, DesiredSlice, SliceWriter, chunked, managed_labels
from kubeclient import ENDPOINT_SLICES, ENDPOINTS, SERVICES, Clientset, InformerFactory

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",
                       "endpoints.kubernetes.io/last-change-trigger-time")
MAX_ENDPOINTS_PER_SUBSET = 1000
MAX_ENDPOINTS_PER_SLICE = 100


def should_mirror(endpoints: Object) -> bool:
    m = meta(endpoints)
    return (m.get("labels") or {}).get(LABEL_SKIP_MIRROR) != "true" and \
        LEADER_ANNOTATION not in (m.get("annotations") or {})


def _family(ip: str) -> str | None:
    try:
        return f"IPv{ipaddress.ip_address(ip).version}"
    except ValueError:
        return None


def mirrored_slices(endpoints: Object, max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> list[DesiredSlice]:
    """The slices that mirror ``endpoints`` (see the module docstring)."""
    groups: dict[tuple[str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    count = 0
    for subset in endpoints.get("subsets") or []:
        ports = [{"name": p.get("name") or "", "port": p.get("port"), "protocol": p.get("protocol") or "TCP",
                  **({"appProtocol": p["appProtocol"]} if p.get("appProtocol") is not None else {})}
                 for p in subset.get("ports") or []]
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in subset.get(field) or []:
                family = _family(address.get("ip") or "")
                if family is None or count >= MAX_ENDPOINTS_PER_SUBSET:
                    continue
                count += 1
                endpoint: dict[str, Any] = {"addresses": [address["ip"]], "conditions": {"ready": ready}}
                for key in ("hostname", "nodeName", "targetRef"):
                    if address.get(key):
                        endpoint[key] = address[key]
                groups.setdefault((family, repr(ports)), (ports, []))[1].append(endpoint)
    families = sorted({family for family, _ in groups})
    return [s for family in families for s in chunked(
        family, [g for (f, _), g in groups.items() if f == family], max_endpoints_per_slice)]


def mirrored_metadata(endpoints: Object) -> dict[str, Any]:
    m = meta(endpoints)
    labels = managed_labels(m.get("labels") or {}, m["name"], CONTROLLER_NAME)
    annotations = {k: v for k, v in (m.get("annotations") or {}).items() if k not in DROPPED_ANNOTATIONS}
    metadata = {"labels": labels, "ownerReferences": [controller_ref(endpoints, "v1", "Endpoints")]}
    return {**metadata, "annotations": annotations} if annotations else metadata


class EndpointSliceMirroringController(Controller):
    name = "endpointslice-mirroring-controller"
    queue_name = "endpoint_slice_mirroring"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.service_informer = factory.informer(SERVICES)
        self.endpoints_informer = factory.informer(ENDPOINTS)
        slice_informer = factory.informer(ENDPOINT_SLICES)
        self.informers = [self.service_informer, self.endpoints_informer, slice_informer]
        for informer in (self.service_informer, self.endpoints_informer):
            informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.writer = SliceWriter(clientset, slice_informer, CONTROLLER_NAME, self.queue)

    async def sync(self, key: str) -> None:
        service = self.service_informer.indexer.get_by_key(key)
        endpoints = self.endpoints_informer.indexer.get_by_key(key)
        mirror = service is not None and not (service.get("spec") or {}).get("selector") and \
            endpoints is not None and should_mirror(endpoints)
        if endpoints is None or not mirror:
            desired: list[DesiredSlice] = []
            metadata: dict[str, Any] = {}
        else:
            desired, metadata = mirrored_slices(endpoints), mirrored_metadata(endpoints)
        if not await self.writer.apply(key, desired, metadata):
            self.queue.add_after(key, STALE_RETRY_SECONDS)
        elif service is None and endpoints is None:
            self.writer.forget(key)
