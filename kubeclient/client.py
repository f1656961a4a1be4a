"""Typed-dict CRUD, watch and subresource calls for one resource, and a ``Clientset`` of them.

``ResourceClient`` turns method calls into the exact kube-apiserver requests (paths from
``kubeclient.resources``, query parameters as client-go names them) over any ``Transport``: the real
``RESTClient`` or the in-memory ``FakeAPIServer``.  Errors arrive as ``apimachinery.errors`` exceptions.

Namespaces: list and watch with ``namespace=None`` span all namespaces; calls that address one object of a
namespaced resource need a namespace — given explicitly or taken from ``obj.metadata.namespace`` — and raise
``ValueError`` without one rather than guess (``create`` alone defaults to ``default``, as kubectl does).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import AsyncGenerator
from typing import Any, Literal, cast

from kubeclient import resources as r
from kubeclient.events import make_event
from kubeclient.resources import Resource
from kubeclient.rest import RESTClient
from kubeclient.types import Object, Transport, WatchEvent

PatchType = Literal["merge", "strategic", "json"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
PropagationPolicy = Literal["Orphan", "Background", "Foreground"]


def _meta(obj: Object) -> dict[str, Any]:
    return cast(dict[str, Any], obj.get("metadata") or {})


def _params(**values: Any) -> dict[str, str]:
    """Query parameters with None dropped and bools/ints spelled as the apiserver parses them."""
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class ResourceClient:
    """All verbs of one resource.  Every method is a single request (``watch`` a single stream)."""

    def __init__(self, rest: Transport, resource: Resource) -> None:
        self.rest = rest
        self.resource = resource

    def _ns(self, namespace: str | None, obj: Object | None = None, *, default: str | None = None) -> str | None:
        """The one namespace rule: explicit, else the object's, else ``default``; required when namespaced."""
        if not self.resource.namespaced:
            return None
        ns = namespace or (_meta(obj).get("namespace") if obj is not None else None) or default
        if not ns:
            raise ValueError(f"{self.resource.plural} is namespaced: pass namespace= or set metadata.namespace")
        return cast(str, ns)

    def _name(self, obj: Object) -> str:
        name = _meta(obj).get("name")
        if not name:
            raise ValueError(f"{self.resource.kind} has no metadata.name")
        return cast(str, name)

    async def get(self, name: str, namespace: str | None = None) -> Object:
        return await self.rest.request("GET", self.resource.path(self._ns(namespace), name))

    async def list(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
    ) -> Object:
        """One page of the collection: ``{"kind": "<Kind>List", "metadata": {resourceVersion, continue}, items}``.

        Items of a list carry no ``kind``/``apiVersion`` on the wire (as in Kubernetes); informers add them.
        """
        params = _params(labelSelector=label_selector, fieldSelector=field_selector, limit=limit,
                         resourceVersion=resource_version)
        if continue_:
            params["continue"] = continue_
        return await self.rest.request("GET", self.resource.path(namespace), params=params)

    async def create(self, obj: Object, namespace: str | None = None, *, subresource: str | None = None) -> Object:
        ns = self._ns(namespace, obj, default="default")
        if subresource:
            return await self.rest.request("POST", self.resource.path(ns, self._name(obj), subresource), body=obj)
        return await self.rest.request("POST", self.resource.path(ns), body=obj)

    async def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        """PUT the whole object (to ``subresource``, such as a CSR's ``approval``); ``metadata.resourceVersion``
        (if set) makes it conditional (409 on mismatch)."""
        path = self.resource.path(self._ns(None, obj), self._name(obj), subresource)
        return await self.rest.request("PUT", path, body=obj)

    async def update_status(self, obj: Object) -> Object:
        """PUT to ``/status``: only ``status`` changes; conditional on ``metadata.resourceVersion`` like update."""
        path = self.resource.path(self._ns(None, obj), self._name(obj), "status")
        return await self.rest.request("PUT", path, body=obj)

    async def patch(
        self,
        name: str,
        patch: Object | builtins.list[Object],
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Object:
        """PATCH with a JSON merge patch (RFC 7386), a strategic merge patch, or a JSON patch (RFC 6902)."""
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r}") from None
        path = self.resource.path(self._ns(namespace), name, subresource)
        return await self.rest.request("PATCH", path, body=patch, content_type=content_type)

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Object:
        """DELETE with ``DeleteOptions`` in the body (as client-go sends them); returns the server's answer.

        ``preconditions`` is ``{"uid": ..., "resourceVersion": ...}`` (either key): 409 if the object differs.
        """
        options = {k: v for k, v in (("gracePeriodSeconds", grace_period_seconds),
                                     ("propagationPolicy", propagation_policy),
                                     ("preconditions", preconditions)) if v is not None}
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        return await self.rest.request("DELETE", self.resource.path(self._ns(namespace), name), body=body)

    async def watch(
        self,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes after ``resource_version`` (unset: ADDED for every current object first).

        ``ERROR`` events are yielded as they come (their object is a ``Status``; 410 means the version is
        too old and the caller must relist).  Close the iterator (``contextlib.aclosing``) to end the watch.
        """
        params = _params(watch=True, resourceVersion=resource_version, labelSelector=label_selector,
                         fieldSelector=field_selector, allowWatchBookmarks=allow_bookmarks or None,
                         timeoutSeconds=timeout_seconds)
        stream = self.rest.stream(self.resource.path(namespace), params=params)
        try:
            async for event in stream:
                yield cast(WatchEvent, event)
        finally:
            await stream.aclose()


class PodClient(ResourceClient):
    """Pods plus the two subresources that components POST: ``binding`` (scheduler) and ``eviction``."""

    async def bind(self, pod: Object, node_name: str) -> Object:
        """Assign ``pod`` to ``node_name`` via ``pods/{name}/binding`` (uid included so a recreated pod fails)."""
        meta = _meta(pod)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid") if meta.get(k)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        return await self.create(binding, meta.get("namespace"), subresource="binding")

    async def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
                    preconditions: dict[str, str] | None = None) -> Object:
        """POST a ``policy/v1`` Eviction (the API-initiated, disruption-budget-aware delete)."""
        eviction: Object = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": namespace}}
        options = {k: v for k, v in (("gracePeriodSeconds", grace_period_seconds),
                                     ("preconditions", preconditions)) if v is not None}
        if options:
            eviction["deleteOptions"] = options
        return await self.create(eviction, namespace, subresource="eviction")


class Clientset:
    """One ``ResourceClient`` per known resource over a shared transport (client-go's ``kubernetes.Clientset``)."""

    def __init__(self, rest: Transport) -> None:
        self.rest = rest
        self.pods = PodClient(rest, r.PODS)
        self.nodes = ResourceClient(rest, r.NODES)
        self.namespaces = ResourceClient(rest, r.NAMESPACES)
        self.events = ResourceClient(rest, r.EVENTS)
        self.events_v1 = ResourceClient(rest, r.EVENTS_V1)  # the same objects, as events.k8s.io/v1 serves them
        self.replication_controllers = ResourceClient(rest, r.REPLICATION_CONTROLLERS)
        self.replica_sets = ResourceClient(rest, r.REPLICA_SETS)
        self.deployments = ResourceClient(rest, r.DEPLOYMENTS)
        self.leases = ResourceClient(rest, r.LEASES)
        self.services = ResourceClient(rest, r.SERVICES)
        self.config_maps = ResourceClient(rest, r.CONFIG_MAPS)
        self.secrets = ResourceClient(rest, r.SECRETS)
        self.service_accounts = ResourceClient(rest, r.SERVICE_ACCOUNTS)
        self.endpoints = ResourceClient(rest, r.ENDPOINTS)
        self.endpoint_slices = ResourceClient(rest, r.ENDPOINT_SLICES)
        self.pod_disruption_budgets = ResourceClient(rest, r.POD_DISRUPTION_BUDGETS)
        self.daemon_sets = ResourceClient(rest, r.DAEMON_SETS)
        self.controller_revisions = ResourceClient(rest, r.CONTROLLER_REVISIONS)
        self.stateful_sets = ResourceClient(rest, r.STATEFUL_SETS)
        self.persistent_volume_claims = ResourceClient(rest, r.PERSISTENT_VOLUME_CLAIMS)
        self.horizontal_pod_autoscalers = ResourceClient(rest, r.HORIZONTAL_POD_AUTOSCALERS)
        self._by_resource: dict[Resource, ResourceClient] = {
            c.resource: c for c in vars(self).values() if isinstance(c, ResourceClient)
        }

    @classmethod
    def from_flags(cls, *, master: str | None = None, kubeconfig: str | os.PathLike[str] | None = None,
                   user_agent: str = "kubelab", **rest_options: Any) -> Clientset:
        """A clientset over a new ``RESTClient`` for the ``--master`` / ``--kubeconfig`` flags."""
        return cls(RESTClient.from_flags(master=master, kubeconfig=kubeconfig, user_agent=user_agent,
                                         **rest_options))

    def resource(self, resource: Resource) -> ResourceClient:
        """The client for ``resource`` (made on demand for resources outside the built-in table)."""
        client = self._by_resource.get(resource)
        if client is None:
            client = self._by_resource[resource] = ResourceClient(self.rest, resource)
        return client

    async def create_event(
        self,
        involved: Object,
        *,
        event_type: Literal["Normal", "Warning"],
        reason: str,
        message: str,
        component: str,
        host: str | None = None,
    ) -> Object:
        """Write one new core/v1 Event about ``involved`` (no aggregation: use ``EventRecorder`` for that)."""
        event = make_event(involved, event_type=event_type, reason=reason, message=message,
                           component=component, host=host)
        return await self.events.create(event)

    async def close(self) -> None:
        """Close the transport if it holds connections (``RESTClient``)."""
        close = getattr(self.rest, "close", None)
        if close is not None:
            await close()
