"""Subresources with semantics of their own: ``status``, ``scale``, ``binding``, ``eviction`` (and the kubelet
proxies ``log``/``exec``, served by ``handlers.proxy``).

- ``status``: GET/PUT/PATCH of the whole object where only ``status`` may change (the strategy's status rules).
- ``ephemeralcontainers`` (pods): the same, where only ``spec.ephemeralContainers`` may change, and only by
  additions (``kubectl debug`` PATCHes it with a strategic merge patch; the strategy's ephemeralcontainers rules).
- ``scale``: an ``autoscaling/v1`` Scale view of ``spec.replicas`` (strategies with ``scale_of``/``apply_scale``);
  writes are recorded in the parent's managedFields with subresource ``scale``, and a server-side apply of a Scale
  makes the applier own the parent's ``.spec.replicas``.
- ``binding``: POST a ``Binding`` to assign an unbound pod to a node (409 if it is already assigned); sets
  ``spec.nodeName`` and the ``PodScheduled`` condition in one write, as kube-apiserver's BindingREST does.
- ``token`` (serviceaccounts): POST a TokenRequest, answered with a signed token (``serviceaccount.tokenrequest``).
- ``eviction``: POST a ``policy/v1`` (or ``v1beta1``) Eviction: the pod is deleted with the eviction's
  DeleteOptions when its PodDisruptionBudget allows (``registry.eviction``).

Scale, Binding and Eviction writes go through admission with their own kinds (``handlers.admit``). The REST
handler routes each subresource (``RESTHandler._subresource``); each function here takes the stores and the
admission chain it needs, not the handler.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.meta import now_rfc3339

from ..admission import AdmissionChain
from ..fieldmanager import Writer, manager_of
from ..registry.eviction import Evictor
from ..registry.store import DeleteOptions, ResourceStore, kubernetes_order
from ..serviceaccount.tokenrequest import TokenRequests
from . import apply
from .admit import admit_object
from .patch import patcher
from .request import APPLY_PATCH, RequestInfo, bool_param, decode_body, decode_object, dry_run_requested, media_type
from .responses import json_response, success_status


# --- binding ----------------------------------------------------------------------------------------------------
def pod_scheduled_condition() -> dict[str, Any]:
    return {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}


async def bind(request: Request, pods: ResourceStore, namespace: str | None, name: str | None,
               body: bytes, admission: AdmissionChain | None = None) -> Response:
    """Assign a pod to a node; also serves ``POST /api/v1/namespaces/{ns}/bindings``. Admission sees a CREATE of
    ``pods/binding`` with the Binding."""
    binding = decode_object(body, request.headers.get("content-type"), "Binding", "v1")
    if pods.decoder is not None:  # typed, as every body: wrong types are the decoder's 400
        pods.decoder.decode(binding, "", "v1", "Binding")
    meta = binding.get("metadata") or {}
    pod_name = name or meta.get("name")
    if not pod_name:
        raise errors.invalid("Binding", "", [Cause("FieldValueRequired", "Required value", "metadata.name")])
    if name and meta.get("name") and meta["name"] != name:
        raise errors.BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                f"({name})")
    binding = await admit_object(admission, pods, "CREATE", namespace, pod_name, "binding", ("", "v1", "Binding"),
                                 binding, options_kind="CreateOptions")
    meta = binding.get("metadata") or {}
    target = binding.get("target") or {}
    node = target.get("name")
    if not node:
        raise errors.invalid("Binding", pod_name, [Cause("FieldValueRequired", "Required value", "target.name")])
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid("Binding", pod_name, [Cause("FieldValueNotSupported",
                                                         f'Unsupported value: "{target["kind"]}"', "target.kind")])
    precondition_uid = meta.get("uid")

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        pmeta = pod["metadata"]
        if pmeta.get("deletionTimestamp"):
            raise errors.conflict("pods", pod_name, why="pod is being deleted, cannot be assigned to a host")
        if precondition_uid and pmeta.get("uid") != precondition_uid:
            raise errors.conflict("pods", pod_name, why="UID in precondition does not match")
        current = pod.get("spec", {}).get("nodeName")
        if current:
            raise errors.conflict("pods", pod_name, why=f"pod {pod_name} is already assigned to node "
                                                        f'"{current}"')
        pod["spec"]["nodeName"] = node
        annotations = meta.get("annotations")
        if annotations:
            pmeta.setdefault("annotations", {}).update(annotations)
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.insert(0, pod_scheduled_condition())
        status["conditions"] = conditions
        return pod

    # One write for nodeName and the condition: a watcher never sees a bound pod without PodScheduled.
    await pods.guaranteed_update(namespace, pod_name, assign, subresource="binding")
    return json_response(success_status(201), 201)


# --- token ---------------------------------------------------------------------------------------------------------
async def token_request(tokens: TokenRequests, request: Request, info: RequestInfo) -> Response:
    """``serviceaccounts/<name>/token``: a TokenRequest answered with a signed token
    (``serviceaccount.tokenrequest``)."""
    body = decode_object(await request.body(), request.headers.get("content-type"), "TokenRequest",
                         "authentication.k8s.io/v1")
    assert info.name is not None and info.namespace is not None
    answer = await tokens.create(body, info.namespace, info.name)
    return json_response(kubernetes_order(answer), 201)


# --- eviction ---------------------------------------------------------------------------------------------------
async def evict(request: Request, info: RequestInfo, store: ResourceStore, pdbs: ResourceStore | None,
                admission: AdmissionChain | None) -> Response:
    """POST of an Eviction: the pod is deleted when its PodDisruptionBudgets (``pdbs``) allow."""
    body = decode_body(await request.body(), request.headers.get("content-type"))
    if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction"):
        raise errors.BadRequest("the body must be a policy/v1 Eviction")
    if store.decoder is not None:  # deleteOptions typed: a gracePeriodSeconds of "abc" or 2^63 is a 400
        store.decoder.decode(body, "policy", "v1", "Eviction")
    assert info.name is not None
    if (body.get("metadata") or {}).get("name") not in (None, info.name):
        raise errors.BadRequest("name in URL does not match name in Eviction object")
    opts = body.get("deleteOptions") or {}
    pre = opts.get("preconditions") or {}
    options = DeleteOptions(grace_period_seconds=opts.get("gracePeriodSeconds"),
                            propagation_policy=opts.get("propagationPolicy"),
                            precondition_uid=pre.get("uid"), precondition_rv=pre.get("resourceVersion"),
                            dry_run=bool(opts.get("dryRun")) or dry_run_requested(request.query_params))
    assert info.namespace is not None
    body.setdefault("apiVersion", "policy/v1")
    body.setdefault("kind", "Eviction")
    await admit_object(admission, store, "CREATE", info.namespace, info.name, "eviction",
                       ("policy", "v1", "Eviction"), body, dry_run=options.dry_run, options_kind="CreateOptions")
    await Evictor(store, pdbs).evict(info.namespace, info.name, options)
    return json_response(success_status(201), 201)


# --- scale ------------------------------------------------------------------------------------------------------
async def serve_scale(request: Request, info: RequestInfo, store: ResourceStore,
                      admission: AdmissionChain | None) -> Response:
    """GET, PUT or PATCH (apply too) of the ``autoscaling/v1`` Scale view of the object's ``spec.replicas``."""
    strategy: Any = store.strategy
    assert info.name is not None
    method = request.method
    if method == "GET":
        co = await store.get(info.namespace, info.name)
        return json_response(strategy.scale_of(co.obj))
    if method == "PATCH" and media_type(request.headers.get("content-type")) == APPLY_PATCH:
        return await _apply_scale(request, info, store)
    if method == "PUT":
        scale = decode_object(await request.body(), request.headers.get("content-type"), "Scale", "autoscaling/v1")
    elif method == "PATCH":
        co = await store.get(info.namespace, info.name)
        scale = patcher(request.headers.get("content-type"), await request.body(), "Scale", strategy.resource,
                        strategy.group)(strategy.scale_of(co.obj))
    else:
        raise errors.MethodNotAllowed(f"the server does not allow this method on the requested resource ({method})")
    options = "UpdateOptions" if method == "PUT" else "PatchOptions"
    if admission is not None and admission.configured():
        old_scale = strategy.scale_of((await store.get(info.namespace, info.name)).obj)
        scale = {**scale, "apiVersion": "autoscaling/v1", "kind": "Scale"}
        scale = await admit_object(admission, store, "UPDATE", info.namespace, info.name, "scale",
                                   ("autoscaling", "v1", "Scale"), scale, old_scale, options_kind=options)
    replicas = _replicas(store, scale, info.name)
    precondition = (scale.get("metadata") or {}).get("resourceVersion") if method == "PUT" else None

    def apply(obj: dict[str, Any]) -> dict[str, Any]:
        strategy.apply_scale(obj, replicas)
        return obj

    writer = Writer(manager_of(request.query_params, request.headers.get("user-agent"), options), "scale")
    co = await store.guaranteed_update(info.namespace, info.name, apply, precondition_rv=precondition or None,
                                       dry_run=dry_run_requested(request.query_params, options), writer=writer)
    return json_response(strategy.scale_of(co.obj))


def _replicas(store: ResourceStore, scale: dict[str, Any], name: str) -> int:
    """The Scale's replicas, once decoded as the typed autoscaling/v1 Scale (wrong types and int32 overflow: 400)
    and validated (negative: 422)."""
    strategy: Any = store.strategy
    if store.decoder is not None:
        store.decoder.decode(scale, "autoscaling", "v1", "Scale")
    replicas = (scale.get("spec") or {}).get("replicas") or 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.BadRequest(f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                                f"{type(replicas).__name__} into Go struct field ScaleSpec.spec.replicas of type int32")
    causes = strategy.validate_scale(scale)
    if causes:
        raise errors.invalid("Scale", name, causes, "autoscaling")
    return replicas


async def _apply_scale(request: Request, info: RequestInfo, store: ResourceStore) -> Response:
    """Server-side apply of a Scale: the applier owns the parent's ``.spec.replicas`` through ``scale`` (as kube's
    scale handler maps Scale fields onto the parent's)."""
    assert info.name is not None
    strategy: Any = store.strategy
    params = request.query_params
    manager = manager_of(params, request.headers.get("user-agent"), "PatchOptions", apply=True)
    config = apply.decode_config(await request.body())
    if (config.get("apiVersion"), config.get("kind")) != ("autoscaling/v1", "Scale"):
        raise errors.BadRequest(f"invalid object type: {config.get('apiVersion') or '/'}, "
                                f"Kind={config.get('kind') or ''}")
    apply.check_name(config, info.name, info.namespace)
    parent: dict[str, Any] = {"apiVersion": strategy.api_version, "kind": strategy.kind,
                              "metadata": {"name": info.name}}
    if "replicas" in (config.get("spec") or {}):
        parent["spec"] = {"replicas": _replicas(store, config, info.name)}
    force = bool_param(params, "force")

    def update(live: dict[str, Any]) -> dict[str, Any]:
        return store.field_manager.apply(live, parent, manager, force, "scale")

    co = await store.guaranteed_update(info.namespace, info.name, update,
                                       dry_run=dry_run_requested(params, "PatchOptions"))
    return json_response(strategy.scale_of(co.obj))
