"""The endpoint controller (``pkg/controller/endpoint``): an Endpoints object per selecting Service.

``sync(namespace/name)`` reads the caches and:

* Service gone → deletes the Endpoints of that name (they carry no ownerReference, as in Kubernetes); at start the
  controller also enqueues every Endpoints without a Service (``checkLeftoverEndpoints``);
* Service without selector, or ``ExternalName`` → nothing (such Endpoints are the user's);
* otherwise ``endpoint_subsets``: each matching pod with an IP that has not finished is one address (IP, nodeName,
  ``targetRef`` to the pod) under ``addresses`` when Ready (or ``publishNotReadyAddresses``) and
  ``notReadyAddresses`` when not; terminating pods are left out unless ``publishNotReadyAddresses``; each service
  port resolves its ``targetPort`` on the pod (a pod without that named port does not get it); addresses with the
  same ports share a subset (``RepackSubsets``). The Endpoints carry the Service's labels (plus
  ``service.kubernetes.io/headless`` without cluster IP) and are written only when subsets or labels changed.

An Endpoints object deleted while its Service exists is re-created. Conflicts (a stale cache) are retried by the
worker loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from apimachinery.errors import Forbidden, NotFound
from apimachinery.meta import Object
from controllers.support.base import is_namespace_terminating, key_of, unwrap
from controllers.support.endpointutil import (
    LABEL_HEADLESS,
    ServicePodsController,
    find_port,
    hostname,
    is_headless,
    pod_ip,
    service_families,
    service_selector,
    should_pod_be_in_endpoints,
    target_ref,
)
from controllers.support.podutil import is_pod_ready, meta
from kubeclient import ENDPOINTS, Clientset, DeletedFinalStateUnknown, InformerFactory

log = logging.getLogger(__name__)

LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"

# One (address, port or None, ready) per pod and port, before repacking.
Entry = tuple[dict[str, Any], dict[str, Any] | None, bool]


def endpoint_address(pod: Object, service: Object, ip: str) -> dict[str, Any]:
    address: dict[str, Any] = {"ip": ip}
    if name := hostname(pod, service):
        address["hostname"] = name
    if node := (pod.get("spec") or {}).get("nodeName"):
        address["nodeName"] = node
    address["targetRef"] = target_ref(pod)
    return address


def endpoint_port(service_port: dict[str, Any], number: int) -> dict[str, Any]:
    port: dict[str, Any] = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol") is not None:
        port["appProtocol"] = service_port["appProtocol"]
    return port


def endpoint_subsets(service: Object, pods: Iterable[Object]) -> list[dict[str, Any]]:
    """The subsets the Service's Endpoints should hold (see the module docstring)."""
    spec = service.get("spec") or {}
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    ports = spec.get("ports") or []
    entries: list[Entry] = []
    for pod in pods:
        ip = pod_ip(pod, service_families(service)[0])
        if ip is None or not should_pod_be_in_endpoints(pod, tolerate):
            continue
        address, ready = endpoint_address(pod, service, ip), tolerate or is_pod_ready(pod)
        if not ports and is_headless(service):
            entries.append((address, None, ready))
        for service_port in ports:
            number = find_port(pod, service_port)
            if number is not None:
                entries.append((address, endpoint_port(service_port, number), ready))
    return repack_subsets(entries)


def _address_key(address: dict[str, Any]) -> tuple[str, str]:
    return address["ip"], (address.get("targetRef") or {}).get("uid") or ""


def _port_key(port: dict[str, Any] | None) -> tuple[Any, ...]:
    return () if port is None else (port.get("name") or "", port["port"], port["protocol"], port.get("appProtocol"))


def repack_subsets(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """``RepackSubsets``: ports offered by the same addresses (with the same readiness) form one subset; addresses
    sorted by IP then pod UID, ports by name, subsets by their addresses."""
    ports: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    offered: dict[tuple[Any, ...], dict[tuple[str, str], tuple[dict[str, Any], bool]]] = {}
    for address, port, ready in entries:
        ports.setdefault(_port_key(port), port)
        offered.setdefault(_port_key(port), {})[_address_key(address)] = (address, ready)
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[tuple[Any, ...]]] = {}
    for port_key, addresses in offered.items():
        groups.setdefault(frozenset((k, ready) for k, (_, ready) in addresses.items()), []).append(port_key)
    subsets = []
    for port_keys in groups.values():
        addresses = offered[port_keys[0]]
        subset: dict[str, Any] = {}
        for field, wanted in (("addresses", True), ("notReadyAddresses", False)):
            chosen = [addresses[k][0] for k in sorted(addresses) if addresses[k][1] is wanted]
            if chosen:
                subset[field] = chosen
        chosen_ports = [ports[k] for k in sorted(port_keys) if ports[k] is not None]
        if chosen_ports:
            subset["ports"] = chosen_ports
        subsets.append(subset)
    return sorted(subsets, key=lambda s: sorted(_address_key(a) for a in [*s.get("addresses", []),
                                                                            *s.get("notReadyAddresses", [])]))


def endpoints_labels(service: Object) -> dict[str, str]:
    labels = dict(meta(service).get("labels") or {})
    labels.pop(LABEL_HEADLESS, None)
    if is_headless(service):
        labels[LABEL_HEADLESS] = ""
    return labels


class EndpointController(ServicePodsController):
    name = "endpoints-controller"
    queue_name = "endpoint"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(clientset, factory, workers=workers)
        self.endpoints_informer = factory.informer(ENDPOINTS)
        self.informers.append(self.endpoints_informer)
        self.endpoints_informer.add_event_handler(on_delete=self._endpoints_deleted)

    def _endpoints_deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        key = key_of(unwrap(obj))
        if self.service(key) is not None:
            self.queue.add(key)

    def background(self) -> list[Any]:
        """``checkLeftoverEndpoints``: Endpoints whose Service went while the controller was away are deleted."""
        for endpoints in self.endpoints_informer.indexer.list():
            if LEADER_ANNOTATION not in (meta(endpoints).get("annotations") or {}):
                key = key_of(endpoints)
                if self.service(key) is None:
                    self.queue.add(key)
        return []

    async def sync(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        service = self.service(key)
        if service is None:
            try:
                await self.clientset.endpoints.delete(name, namespace)
                log.info("deleted endpoints %s: the service is gone", key)
            except NotFound:
                pass
            return
        selector = service_selector(service)
        if selector is None:
            return
        subsets = endpoint_subsets(service, self.selected_pods(service, selector))
        labels = endpoints_labels(service)
        current = self.endpoints_informer.indexer.get_by_key(key)
        if current is not None and (current.get("subsets") or []) == subsets and \
                (meta(current).get("labels") or {}) == labels:
            return
        if current is None:
            try:
                await self.clientset.endpoints.create(with_subsets({"metadata": {"name": name, "labels": labels}},
                                                                   subsets), namespace)
            except Forbidden as err:
                if not is_namespace_terminating(err):
                    raise
            return
        updated = with_subsets({**current, "metadata": {**meta(current), "labels": labels}}, subsets)
        await self.clientset.endpoints.update(updated)


def with_subsets(endpoints: Object, subsets: list[dict[str, Any]]) -> Object:
    """``subsets`` set, or left out when empty (Go's ``omitempty``)."""
    endpoints.pop("subsets", None)
    return {**endpoints, "subsets": subsets} if subsets else endpoints
