"""Generic REST handlers: one code path for every resource's get, list, create, update, patch and delete.

Per-resource behaviour comes from the resource's strategy (via its ``ResourceStore``). The handler routes every
subresource itself (``RESTHandler._subresource``); those with semantics of their own (binding, eviction, scale,
token: ``handlers.subresources``; log, exec, attach, portforward: ``handlers.proxy``; proxy:
``handlers.resourceproxy``) and server-side apply (``handlers.apply``) are given the stores and the admission chain
they need, never the handler, and none of them imports this module. The answers' shapes are
``handlers.responses``.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors
from apimachinery.fields import parse_field_selector
from apimachinery.labels import parse_selector

from ..admission import AdmissionChain
from ..authentication import request_user
from ..fieldmanager import Writer, manager_of
from ..registry.decoder import field_validation_mode
from ..registry.readonly import ReadOnlyStore
from ..registry.registry import Registry
from ..registry.store import DeleteOptions, ResourceStore, filter_for
from ..registry.virtual import VirtualStore
from ..serviceaccount.tokenrequest import TokenRequests
from ..storage.cacher import CachedObject
from ..storage.etcd3 import Compacted
from . import apply, proxy, resourceproxy, subresources
from .admit import request_admission
from .listoptions import list_options
from .patch import patcher
from .request import (
    APPLY_PATCH,
    JSON,
    PROTOBUF,
    YAML,
    RequestInfo,
    bool_param,
    decode_body,
    decode_object,
    dry_run_requested,
    int_param,
    media_type,
    negotiate,
)
from .responses import json_response, list_json, render_list, render_object
from .table import include_object, to_table
from .warnings import add_warning
from .watch import serve_watch

CONTINUE_VERSION = "meta.k8s.io/v1"


# --- continue tokens --------------------------------------------------------------------------------------------
def encode_continue(rv: int, start: bytes, prefix: bytes) -> str:
    token = {"v": CONTINUE_VERSION, "rv": rv, "start": start[len(prefix):].decode()}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def decode_continue(token: str, prefix: bytes) -> tuple[int, bytes]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        if data.get("v") != CONTINUE_VERSION or int(data["rv"]) <= 0:
            raise ValueError
        return int(data["rv"]), prefix + str(data["start"]).encode()
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise errors.BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version "
                                "meta.k8s.io/v1)") from None


# --- verbs ------------------------------------------------------------------------------------------------------
COLLECTION_VERBS = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}
OBJECT_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def check_verb(verbs: tuple[str, ...], method: str, named: bool, watch: bool) -> None:
    """kube-apiserver routes only the verbs a resource has: a path with none of them is 404 (no route), a method
    the path does not serve is 405 (GET of a create-only resource, POST to an object's path)."""
    by_method = OBJECT_VERBS if named else COLLECTION_VERBS
    if not any(verb in verbs for verb in (*by_method.values(), "watch")):
        raise errors.NotFound("the server could not find the requested resource")
    verb = "watch" if method == "GET" and watch else by_method.get(method)
    if verb not in verbs:
        raise RESTHandler._not_allowed(method)


class RESTHandler:
    """Dispatches a parsed request to the verb that serves it."""

    def __init__(self, registry: Registry, admission: AdmissionChain | None = None,
                 token_requests: TokenRequests | None = None) -> None:
        self.registry = registry
        self.admission = admission
        self.token_requests = token_requests  # serviceaccounts/<name>/token (None: this apiserver issues none)

    async def handle(self, request: Request, info: RequestInfo) -> Response:
        store = self.registry.lookup(info.group, info.version, info.resource)
        strategy = store.strategy
        if info.namespace is not None and not strategy.namespaced:
            raise errors.NotFound("the server could not find the requested resource")
        method = request.method
        params = request.query_params
        if strategy.deprecation_warning:
            add_warning(strategy.deprecation_warning)
        if not strategy.protobuf and method in ("POST", "PUT") and \
                media_type(request.headers.get("content-type")) == PROTOBUF:
            raise errors.UnsupportedMediaType(f"the body of the request was in an unknown format - accepted media "
                                              f"types include: {JSON}, {YAML}")
        if info.subresource:
            if info.subresource not in strategy.subresources or info.name is None:
                raise errors.NotFound("the server could not find the requested resource")
            assert isinstance(store, ResourceStore)
            return await self._subresource(request, info, store)
        watch = info.watch_path or bool_param(params, "watch")
        check_verb(strategy.verbs, method, info.name is not None, watch)
        if isinstance(store, VirtualStore):
            return await self.create_virtual(request, info, store)
        if isinstance(store, ReadOnlyStore):
            return await self.read_computed(request, info, store)
        if info.name is None:
            if method == "GET":
                if watch:
                    return await serve_watch(request, info, store, negotiate(request.headers.get("accept")))
                return await self.list_collection(request, info, store)
            if method == "POST":
                return await self.create(request, info, store)
            if method == "DELETE":
                return await self.delete_collection(request, info, store)
            raise self._not_allowed(method)
        if method == "GET":
            if watch:
                # A watch on one object is a watch with a metadata.name field selector.
                return await serve_watch(request, info, store, negotiate(request.headers.get("accept")),
                                         name=info.name)
            co = await store.get(info.namespace, info.name, params.get("resourceVersion"))
            return render_object(store, co, negotiate(request.headers.get("accept")), params)
        if method == "PUT":
            return await self.update(request, info, store)
        if method == "PATCH":
            return await self.patch(request, info, store)
        if method == "DELETE":
            return await self.delete(request, info, store)
        raise self._not_allowed(method)

    async def _subresource(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        """Route a subresource request: the whole-object ones (status and the like) through this handler's own
        verbs, the rest to the module that serves it, with what that needs."""
        sub = info.subresource
        method = request.method
        assert info.name is not None
        if sub in ("status", "ephemeralcontainers", "approval"):  # the whole object; only the subresource's changes
            if method == "GET":
                co = await store.get(info.namespace, info.name)
                return render_object(store, co, negotiate(request.headers.get("accept")), request.query_params)
            if method == "PUT":
                return await self.update(request, info, store, subresource=sub)
            if method == "PATCH":
                return await self.patch(request, info, store, subresource=sub)
        elif sub == "finalize" and method == "PUT":
            return await self.update(request, info, store, subresource="finalize")
        elif sub == "scale":
            return await subresources.serve_scale(request, info, store, self.admission)
        elif sub == "binding" and method == "POST":
            return await subresources.bind(request, store, info.namespace, info.name, await request.body(),
                                           self.admission)
        elif sub == "eviction" and method == "POST":
            pdbs = self.registry.stores.get(("policy", "poddisruptionbudgets"))
            return await subresources.evict(request, info, store, pdbs, self.admission)
        elif sub == "token" and method == "POST" and self.token_requests is not None:
            return await subresources.token_request(self.token_requests, request, info)
        elif sub in ("log", "exec", "attach", "portforward"):
            return await proxy.serve(request, info, store, self.registry, self.admission)
        elif sub == "proxy":
            return await resourceproxy.serve(request, info, store, self.registry, self.admission)
        raise self._not_allowed(method)

    @staticmethod
    def _not_allowed(method: str) -> errors.StatusError:
        return errors.MethodNotAllowed(f"the server does not allow this method on the requested resource "
                                       f"({method})")

    # --- list -----------------------------------------------------------------------------------------------
    async def list_collection(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        params = request.query_params
        output = negotiate(request.headers.get("accept"))
        objects, list_meta = await self.list_objects(params, info, store)
        return render_list(store, objects, list_meta, output, params)

    async def list_objects(self, params: Any, info: RequestInfo,
                           store: ResourceStore) -> tuple[list[CachedObject], dict[str, Any]]:
        """LIST with kube-apiserver's resourceVersion semantics:

        - ``resourceVersion`` unset: the most recent state (consistent), from the cache after ``wait_fresh``;
        - ``0``: any state, straight from the cache; ``N``: not older than N (``resourceVersionMatch=Exact``:
          exactly N, from etcd);
        - ``limit``/``continue``: pages from etcd at one revision, so every page comes from the same snapshot
          (410 Expired once etcd has compacted it)."""
        options = list_options(params)
        labels = parse_selector(params.get("labelSelector") or "")
        fields = parse_field_selector(params.get("fieldSelector") or "")
        filter = filter_for(store.strategy, info.namespace, labels, fields)
        limit = max(options.limit, 0)  # kube pages only for a positive limit
        token = options.continue_token
        rv_param = params.get("resourceVersion")
        rv_match = options.resource_version_match
        if token:
            if rv_param and rv_param != "0":
                raise errors.BadRequest("specifying resource version is not allowed when using continue")
            revision, start = decode_continue(token, store.prefix)
            return await self._page(store, filter, limit, start, revision)
        if rv_param and rv_match == "Exact":
            return await self._page(store, filter, limit, None, self._rv(rv_param))
        if limit and rv_param != "0":
            if rv_param:
                await store.cache.wait_rv(self._rv(rv_param))
            return await self._page(store, filter, limit, None, 0)
        if rv_param is None or rv_param == "":
            await store.cache.wait_fresh()
        elif rv_param != "0":
            await store.cache.wait_rv(self._rv(rv_param))
        objects = store.cache.list(filter)
        return objects, {"resourceVersion": str(store.cache.rv)}

    @staticmethod
    def _rv(value: str) -> int:
        try:
            rv = int(value)
            if rv < 0:
                raise ValueError
            return rv
        except ValueError:
            raise errors.BadRequest(f'resourceVersion: Invalid value: "{value}": must be a non-negative '
                                    f"integer") from None

    async def _page(self, store: ResourceStore, filter: Any, limit: int, start: bytes | None,
                    revision: int) -> tuple[list[CachedObject], dict[str, Any]]:
        try:
            objects, rev, next_start = await store.list_from_storage(filter, limit, start, revision)
        except Compacted:
            raise errors.Gone("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter, or use the continue "
                              "token in this response to retrieve the remainder of the results.") from None
        meta: dict[str, Any] = {"resourceVersion": str(rev)}
        if next_start is not None:
            meta["continue"] = encode_continue(rev, next_start, store.prefix)
        return objects, meta

    # --- create ---------------------------------------------------------------------------------------------
    async def create(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        strategy = store.strategy
        obj = decode_object(await request.body(), request.headers.get("content-type"), strategy.kind,
                            strategy.api_version)
        params = request.query_params
        namespace = info.namespace
        if strategy.namespaced:
            namespace = namespace or (obj.get("metadata") or {}).get("namespace")
            if not namespace:
                raise errors.BadRequest("the server could not find the requested resource: a namespace is "
                                        "required")
            name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName", "")
            await self.registry.check_namespace(namespace, strategy.resource, name)
        writer = Writer(manager_of(params, request.headers.get("user-agent"), "CreateOptions"))
        dry_run = dry_run_requested(params)
        admission = request_admission(self.admission, "CREATE", store, info, "", "CreateOptions", dry_run,
                                      params.get("fieldManager"))
        co = await store.create(obj, namespace, dry_run=dry_run, field_validation=field_validation_mode(params),
                                writer=writer, admission=admission)
        return render_object(store, co, negotiate(request.headers.get("accept")), params, status=201)

    async def create_virtual(self, request: Request, info: RequestInfo, store: VirtualStore) -> Response:
        """POST of a create-only resource: the answer, 201, nothing stored (``check_verb`` let only POST by)."""
        strategy = store.strategy
        obj = decode_object(await request.body(), request.headers.get("content-type"), strategy.kind,
                            strategy.api_version)
        dry_run_requested(request.query_params)  # checked as for any create; nothing is written either way
        co = await store.create_async(obj, info.namespace, request_user(), field_validation_mode(request.query_params))
        return json_response(co.raw, 201)

    async def read_computed(self, request: Request, info: RequestInfo, store: ReadOnlyStore) -> Response:
        """GET or LIST of a read-only computed resource (``check_verb`` let only those by): objects or a Table."""
        output = negotiate(request.headers.get("accept"))
        strategy = store.strategy
        objects = [await store.get(info.name)] if info.name is not None else await store.list()
        if output.table:
            return json_response(to_table(strategy, [co.obj for co in objects], include_object(request.query_params),
                                          {"resourceVersion": ""} if info.name is None else None))
        if info.name is not None:
            return json_response(objects[0].raw)
        return json_response(list_json(strategy, objects, {}))

    # --- update ---------------------------------------------------------------------------------------------
    async def update(self, request: Request, info: RequestInfo, store: ResourceStore,
                     subresource: str = "") -> Response:
        strategy = store.strategy
        assert info.name is not None
        obj = decode_object(await request.body(), request.headers.get("content-type"), strategy.kind,
                            strategy.api_version)
        meta = obj.get("metadata") or {}
        if meta.get("name") and meta["name"] != info.name:
            raise errors.BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                    f"({info.name})")
        precondition = str(meta.get("resourceVersion") or "") or None
        writer = Writer(manager_of(request.query_params, request.headers.get("user-agent"), "UpdateOptions"),
                        subresource)
        dry_run = dry_run_requested(request.query_params, "UpdateOptions")
        admission = request_admission(self.admission, "UPDATE", store, info, info.name, "UpdateOptions", dry_run,
                                      request.query_params.get("fieldManager"), subresource)
        # A uid in the body is a precondition (kube-apiserver's defaultUpdatedObjectInfo): 409 if it differs.
        co = await store.guaranteed_update(info.namespace, info.name, lambda _old: obj, subresource=subresource,
                                           precondition_rv=precondition, precondition_uid=meta.get("uid") or None,
                                           dry_run=dry_run,
                                           field_validation=field_validation_mode(request.query_params,
                                                                                  "UpdateOptions"),
                                           writer=writer, admission=admission)
        return render_object(store, co, negotiate(request.headers.get("accept")), request.query_params)

    # --- patch ----------------------------------------------------------------------------------------------
    async def patch(self, request: Request, info: RequestInfo, store: ResourceStore,
                    subresource: str = "") -> Response:
        assert info.name is not None
        strategy = store.strategy
        if media_type(request.headers.get("content-type")) == APPLY_PATCH:
            return await apply.serve(request, info, store, self.registry, self.admission, subresource)
        apply_patch = patcher(request.headers.get("content-type"), await request.body(), strategy.kind,
                              strategy.resource, strategy.group, strategy.strategic_merge)
        writer = Writer(manager_of(request.query_params, request.headers.get("user-agent"), "PatchOptions"),
                        subresource)
        dry_run = dry_run_requested(request.query_params, "PatchOptions")
        admission = request_admission(self.admission, "UPDATE", store, info, info.name, "PatchOptions", dry_run,
                                      request.query_params.get("fieldManager"), subresource)
        co = await store.guaranteed_update(info.namespace, info.name, apply_patch, subresource=subresource,
                                           dry_run=dry_run,
                                           field_validation=field_validation_mode(request.query_params,
                                                                                  "PatchOptions"),
                                           writer=writer, admission=admission)
        return render_object(store, co, negotiate(request.headers.get("accept")), request.query_params)

    # --- delete ---------------------------------------------------------------------------------------------
    @staticmethod
    async def delete_options(request: Request, store: ResourceStore) -> DeleteOptions:
        """DeleteOptions from the query and the body; the body is decoded as the typed meta/v1 DeleteOptions, so a
        value of the wrong type is the decoder's 400 (kube's own decoder answers such a body with a 500)."""
        params = request.query_params
        options = DeleteOptions(
            grace_period_seconds=int_param(params, "gracePeriodSeconds"),
            propagation_policy=params.get("propagationPolicy") or None,
            dry_run=dry_run_requested(params, "DeleteOptions"),
        )
        orphan = params.get("orphanDependents")
        body = await request.body()
        if body.strip():
            data = decode_body(body, request.headers.get("content-type"))
            if not isinstance(data, dict):
                raise errors.BadRequest("DeleteOptions must be a JSON object")
            if store.decoder is not None:
                store.decoder.decode(data, "", "v1", "DeleteOptions")
            if data.get("gracePeriodSeconds") is not None:
                options.grace_period_seconds = int(data["gracePeriodSeconds"])
            if data.get("propagationPolicy"):
                options.propagation_policy = data["propagationPolicy"]
            if data.get("orphanDependents") is not None:
                orphan = str(data["orphanDependents"]).lower()
            if data.get("dryRun"):
                options.dry_run = True
            pre = data.get("preconditions") or {}
            options.precondition_uid = pre.get("uid")
            options.precondition_rv = pre.get("resourceVersion")
        if orphan is not None and options.propagation_policy is None:
            options.propagation_policy = "Orphan" if str(orphan).lower() == "true" else "Background"
        if options.grace_period_seconds is not None and options.grace_period_seconds < 0:
            options.grace_period_seconds = 1 if options.grace_period_seconds != 0 else 0
        return options

    async def delete(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        assert info.name is not None
        options = await self.delete_options(request, store)
        admission = request_admission(self.admission, "DELETE", store, info, info.name, "DeleteOptions",
                                      options.dry_run)
        self.registry.deleting(store, info.name)
        co, _removed = await store.delete(info.namespace, info.name, options, admission)
        return render_object(store, co, negotiate(request.headers.get("accept")), request.query_params)

    async def delete_collection(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        options = await self.delete_options(request, store)
        objects, list_meta = await self.list_objects(request.query_params, info, store)
        deleted: list[CachedObject] = []
        for co in objects:
            meta = co.obj["metadata"]
            try:
                admission = request_admission(self.admission, "DELETE", store, info, meta["name"], "DeleteOptions",
                                              options.dry_run)
                self.registry.deleting(store, meta["name"])
                result, _ = await store.delete(meta.get("namespace"), meta["name"], options, admission)
                deleted.append(result)
            except errors.NotFound:
                continue
        return render_list(store, deleted, list_meta, negotiate(request.headers.get("accept")),
                                request.query_params)
