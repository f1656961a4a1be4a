"""PATCH with ``application/apply-patch+yaml``: server-side apply (kube-apiserver's ``applyPatcher``).

The body (YAML or JSON) is the applier's whole intent for the object. The request needs ``fieldManager`` (422
otherwise, as kube validates PatchOptions); ``force=true`` takes conflicting fields over. The object's
apiVersion/kind must be the endpoint's and its name the URL's (400). When the object does not exist it is
created (201) — for namespaced objects too, once the namespace admits it — so one request both creates and
updates. The merge and the ownership rules live in ``apiserver.fieldmanager``; this module only wires the request
to the store's create and update paths, which validate and default as for any other write.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors

from ..admission import AdmissionChain
from ..fieldmanager import manager_of
from ..registry.decoder import field_validation_mode
from ..registry.registry import Registry
from ..registry.store import ResourceStore
from .admit import request_admission
from .request import APPLY_PATCH, JSON, RequestInfo, bool_param, decode_body, dry_run_requested, negotiate
from .responses import render_object


def decode_config(body: bytes) -> dict[str, Any]:
    """The applied configuration: JSON or YAML, with the size and depth limits of every body."""
    if body.lstrip()[:1] == b"{":
        try:
            config = decode_body(body, JSON, (JSON,))
        except errors.BadRequest as err:
            raise errors.BadRequest(f"error decoding YAML: {err.message}") from None
    else:
        config = decode_body(body, APPLY_PATCH, (APPLY_PATCH,))
    if not isinstance(config, dict):
        raise errors.BadRequest("error decoding YAML: the applied configuration must be an object")
    return config


def check_name(config: dict[str, Any], name: str, namespace: str | None) -> None:
    """``checkName``: the applied object names the URL's object."""
    meta = config.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    if meta.get("name") != name:
        raise errors.BadRequest(f"the name of the object ({meta.get('name') or ''}) does not match the name on "
                                f"the URL ({name})")
    if namespace and meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.BadRequest(f"the namespace of the object ({meta['namespace']}) does not match the namespace "
                                f"on the request ({namespace})")


async def serve(request: Request, info: RequestInfo, store: ResourceStore, registry: Registry,
                admission_chain: AdmissionChain | None, subresource: str = "") -> Response:
    """Apply ``request``'s configuration to the object (``registry``: its namespace's check when it is created)."""
    assert info.name is not None
    params = request.query_params
    manager = manager_of(params, request.headers.get("user-agent"), "PatchOptions", apply=True)
    force = bool_param(params, "force")
    dry_run = dry_run_requested(params, "PatchOptions")
    validation = field_validation_mode(params, "PatchOptions")
    config = decode_config(await request.body())
    check_name(config, info.name, info.namespace)
    precondition = str((config.get("metadata") or {}).get("resourceVersion") or "") or None
    field_manager = store.field_manager

    def apply(live: dict[str, Any]) -> dict[str, Any]:
        return field_manager.apply(live, config, manager, force, subresource)

    output = negotiate(request.headers.get("accept"))
    requested_manager = params.get("fieldManager")
    for _ in range(2):
        try:
            admission = request_admission(admission_chain, "UPDATE", store, info, info.name, "PatchOptions",
                                          dry_run, requested_manager, subresource)
            co = await store.guaranteed_update(info.namespace, info.name, apply, subresource=subresource,
                                               precondition_rv=precondition, dry_run=dry_run,
                                               field_validation=validation, admission=admission)
            return render_object(store, co, output, params)
        except errors.NotFound:
            if subresource or precondition:
                raise
        if store.strategy.namespaced:
            assert info.namespace is not None
            await registry.check_namespace(info.namespace, store.strategy.resource, info.name)
        try:
            admission = request_admission(admission_chain, "CREATE", store, info, info.name, "PatchOptions",
                                          dry_run, requested_manager)
            co = await store.create(apply({}), info.namespace, dry_run=dry_run, field_validation=validation,
                                    admission=admission)
            return render_object(store, co, output, params, status=201)
        except errors.AlreadyExists:
            continue  # created meanwhile: apply to it
    raise errors.conflict(store.strategy.resource, info.name, store.strategy.group)
