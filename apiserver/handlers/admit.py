"""Admission of the requests whose object is not the resource's own: subresources with a kind of their own.

* CONNECT (``pods/exec``, ``pods/attach``, ``pods/portforward``), run as kube-apiserver's connect handler does
  before dialling the kubelet: the object is the request's options — ``PodExecOptions``, ``PodAttachOptions`` or
  ``PodPortForwardOptions`` built from the query — and there is no old object;
* CREATE of ``pods/binding`` (a ``Binding``) and ``pods/eviction`` (a ``policy/v1`` ``Eviction``);
* UPDATE of ``<resource>/scale`` (``autoscaling/v1`` ``Scale`` objects, the new and the old).

``request_admission`` binds the chain to an ordinary write of the resource's own object (create, update, patch,
apply, delete), for the handlers that make one.
"""

from __future__ import annotations

from typing import Any

from ..admission import AdmissionChain, RequestAdmission
from ..admission.attributes import Operation, options_for
from ..registry.store import ResourceStore
from .request import RequestInfo

OPTIONS_KINDS = {"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}
_FLAGS = ("stdin", "stdout", "stderr", "tty")


def _true(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "t", "yes")


def connect_options(subresource: str, params: Any) -> dict[str, Any]:
    """The options object of a CONNECT request, as kube decodes it from the query (``omitempty`` fields left out)."""
    kind = OPTIONS_KINDS[subresource]
    options: dict[str, Any] = {"kind": kind, "apiVersion": "v1"}
    if subresource == "portforward":
        ports = [int(p) for value in params.getlist("ports") for p in value.split(",") if p.strip().isdigit()]
        if ports:
            options["ports"] = ports
        return options
    for flag in _FLAGS:
        if _true(params.get(flag)):
            options[flag] = True
    if params.get("container"):
        options["container"] = params["container"]
    if subresource == "exec" and params.getlist("command"):
        options["command"] = params.getlist("command")
    return options


async def admit_connect(admission: AdmissionChain | None, pods: ResourceStore, namespace: str | None, name: str,
                        subresource: str, params: Any) -> None:
    """Run the chain for a CONNECT; a refusal raises its StatusError before anything is dialled."""
    if admission is not None:
        await admit_object(admission, pods, "CONNECT", namespace, name, subresource, ("", "v1",
                           OPTIONS_KINDS[subresource]), connect_options(subresource, params))


async def admit_object(admission: AdmissionChain | None, store: ResourceStore, operation: Operation,
                       namespace: str | None, name: str, subresource: str, kind: tuple[str, str, str],
                       obj: dict[str, Any], old: dict[str, Any] | None = None, dry_run: bool = False,
                       options_kind: str | None = None) -> dict[str, Any]:
    """Mutating then validating admission of a subresource's object of another ``kind`` (group, version, kind);
    the object as the mutating plugins left it."""
    if admission is None:
        return obj
    request = admission.request(operation=operation, strategy=store.strategy, namespace=namespace, name=name,
                                subresource=subresource, kind=kind, dry_run=dry_run,
                                options=options_for(options_kind, None, dry_run) if options_kind else None)
    if request is None:
        return obj
    obj = await request.mutate(obj, old) or obj
    await request.validate(obj, old)
    return obj


def request_admission(admission: AdmissionChain | None, operation: Operation, store: ResourceStore,
                      info: RequestInfo, name: str, options_kind: str, dry_run: bool,
                      field_manager: str | None = None, subresource: str = "") -> RequestAdmission | None:
    """The admission chain bound to this request (None without a chain, or for an exempt resource)."""
    if admission is None or not admission.configured_for(store.strategy.group, store.strategy.resource):
        return None
    return admission.request(operation=operation, strategy=store.strategy, namespace=info.namespace, name=name,
                             subresource=subresource, dry_run=dry_run,
                             options=options_for(options_kind, field_manager, dry_run))
