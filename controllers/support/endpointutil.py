"""What the endpoint and endpointslice controllers share (``pkg/controller/util/endpoint``, ``podutil.FindPort``).

* ``service_selector``: the pods a Service selects, or None for a Service this controller leaves alone (no
  selector: its endpoints are written by hand; ``ExternalName``: it has none);
* ``should_pod_be_in_endpoints``: a pod with an IP that has not finished (terminating pods only when asked);
* ``find_port``: a service port's ``targetPort`` on one pod — a number, or the name of a container port with the
  same protocol (restartable init containers included);
* ``ServicePodsController``: the informers and handlers both controllers have — a Service's key is enqueued when
  the Service changes and when a pod it selects (before or after the change) is added, changed or deleted.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.labels import Selector, selector_from_set
from apimachinery.meta import Object
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.podutil import is_pod_terminal, meta
from kubeclient import NAMESPACE_INDEX, PODS, SERVICES, Clientset, DeletedFinalStateUnknown, InformerFactory

LABEL_HEADLESS = "service.kubernetes.io/headless"


def service_selector(service: Mapping[str, Any]) -> Selector | None:
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName" or not spec.get("selector"):
        return None
    return selector_from_set(spec["selector"])


def is_headless(service: Mapping[str, Any]) -> bool:
    """No cluster IP (``IsServiceIPSet`` false): the endpoints carry ``service.kubernetes.io/headless``."""
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


def should_pod_be_in_endpoints(pod: Object, include_terminating: bool) -> bool:
    if is_pod_terminal(pod):
        return False
    status = pod.get("status") or {}
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not meta(pod).get("deletionTimestamp")


def pod_ip(pod: Object, family: str) -> str | None:
    """The pod's address of ``family`` (``IPv4``/``IPv6``)."""
    status = pod.get("status") or {}
    candidates = [i.get("ip") for i in status.get("podIPs") or []] or [status.get("podIP")]
    for ip in candidates:
        try:
            if ip and ipaddress.ip_address(ip).version == (6 if family == "IPv6" else 4):
                return str(ip)
        except ValueError:
            continue
    return None


def service_families(service: Mapping[str, Any]) -> list[str]:
    return list((service.get("spec") or {}).get("ipFamilies") or ["IPv4"])


def find_port(pod: Object, service_port: Mapping[str, Any]) -> int | None:
    target = service_port.get("targetPort")
    if isinstance(target, int):
        return target
    if not target:
        return service_port.get("port")
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == service_port.get("protocol"):
                number: int | None = port.get("containerPort")
                return number
    return None


def target_ref(pod: Object) -> dict[str, Any]:
    m = meta(pod)
    return {"kind": "Pod", "namespace": m.get("namespace"), "name": m.get("name"), "uid": m.get("uid")}


def hostname(pod: Object, service: Object) -> str | None:
    """``ShouldSetHostname``: the pod's hostname when its subdomain is this service (same namespace)."""
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == meta(service).get("name") and \
            meta(pod).get("namespace") == meta(service).get("namespace"):
        return str(spec["hostname"])
    return None


class ServicePodsController(Controller):
    """Service and pod informers; handlers enqueue ``namespace/name`` of the affected Services."""

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.service_informer = factory.informer(SERVICES)
        self.pod_informer = factory.informer(PODS)
        self.informers = [self.service_informer, self.pod_informer]
        self.service_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.pod_informer.add_event_handler(self._pod_changed, self._pod_updated, self._pod_changed)

    def service(self, key: str) -> Object | None:
        return self.service_informer.indexer.get_by_key(key)

    def selected_pods(self, service: Object, selector: Selector) -> list[Object]:
        pods = self.pod_informer.indexer.by_index(NAMESPACE_INDEX, meta(service).get("namespace") or "")
        return [p for p in pods if selector.matches(meta(p).get("labels"))]

    def services_of(self, pod: Object) -> set[str]:
        """``GetPodServiceMemberships``: the Services in the pod's namespace whose selector matches it."""
        keys = set()
        for service in self.service_informer.indexer.by_index(NAMESPACE_INDEX, meta(pod).get("namespace") or ""):
            selector = service_selector(service)
            if selector is not None and selector.matches(meta(pod).get("labels")):
                keys.add(key_of(service))
        return keys

    def _pod_changed(self, obj: Object | DeletedFinalStateUnknown) -> None:
        for key in self.services_of(unwrap(obj)):
            self.queue.add(key)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return
        for key in self.services_of(old) | self.services_of(new):
            self.queue.add(key)
