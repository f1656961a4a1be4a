"""The apiserver application: the app factory wiring etcd, the registry and the handlers together.

Resource paths (``/api/v1/…`` and ``/apis/{group}/{version}/…``) go to the generic REST handler through a
plain ASGI router, which parses the path itself (as kube-apiserver's RequestInfoFactory), so every resource is
served by the same code. Discovery, health, OpenAPI and the exec/attach websockets are Starlette routes
(``routes``). Every error leaves as a Kubernetes ``Status`` body; an unexpected exception is a 500 InternalError
and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from apimachinery import errors
from apimachinery import metrics as process_metrics

from . import flowcontrol, routes
from .admission import AdmissionChain
from .admission.conditions import WebhookMatchConditions
from .admission.defaultingressclass import DefaultIngressClass
from .admission.limitranger import LimitRangerDefaults, LimitRangerValidation
from .admission.noderestriction import NodeRestriction
from .admission.policy import ValidatingAdmissionPolicies
from .admission.policy.typecheck import PolicyStatus, TypeChecker
from .admission.priority import Priority
from .admission.resourcequota import ResourceQuotaAdmission
from .admission.runtimeclass import RuntimeClass
from .admission.serviceaccount import NAME as SERVICE_ACCOUNT_PLUGIN
from .admission.serviceaccount import ServiceAccountAdmission
from .admission.sources import Sources
from .admission.storage import DefaultStorageClass, PersistentVolumeClaimResize, StorageObjectInUseProtection
from .admission.webhook import MutatingWebhooks, ValidatingWebhooks
from .admission.webhook.client import WebhookClient
from .apiextensions.celrules import CELRules
from .apiextensions.controller import CRDController
from .apiextensions.openapi import custom_openapi
from .apiextensions.schemavalidation import RuleValidator
from .apiextensions.strategy import CustomResourceStrategy
from .audit import AuditMiddleware, LogBackend, load_policy
from .authentication import AuthenticationMiddleware, RequestAuthenticator, TokenAuthenticator
from .authenticators.bootstraptoken import BootstrapTokenAuthenticator
from .authenticators.tokenfile import TokenFile
from .authorizer import AlwaysAllow, AlwaysDeny, Member, configure
from .authz import filter as authz_filter
from .authz.escalation import EscalationCheck
from .authz.node import NodeAuthorizer
from .authz.nodegraph import NodeGraph
from .authz.policy import NODE_RULES
from .authz.rbac import RBACAuthorizer
from .authz.reconcile import reconcile as reconcile_policy
from .authz.rules import compile_rules
from .autoregister import AutoRegister, served_group_versions
from .components import DEFAULT_CONTROLLER_MANAGER_HEALTHZ, DEFAULT_SCHEDULER_HEALTHZ, component_probes
from .handlers import discovery, openapi, proxy, watches
from .handlers.directwrite import ServerSend
from .handlers.request import limit_body, parse_path
from .handlers.responses import json_response, status_response
from .handlers.rest import RESTHandler
from .handlers.subresources import bind
from .handlers.warnings import WarningMiddleware, add_warning
from .instrumentation import RequestMetrics
from .metrics import api as metrics_api
from .openapi import documents as openapi_documents
from .registry import all_strategies
from .registry.componentstatuses import ComponentStatusStrategy
from .registry.decoder import Decoder
from .registry.endpoints import endpoints_address, kubernetes_endpoints
from .registry.endpointslices import endpoint_slice_address, kubernetes_endpoint_slice
from .registry.masterleases import MasterLeases
from .registry.priorityclasses import SYSTEM_PRIORITY_CLASSES
from .registry.registry import BootstrapObject, Registry, system_namespaces
from .registry.services import kubernetes_service
from .registry.store import ETCD_MAX_REQUEST_BYTES
from .registry.tokenreviews import TokenReviewStrategy
from .serviceaccount import config as service_account_config
from .serviceaccount.config import ServiceAccountConfig
from .serviceaccount.oidc import CACHE_CONTROL, CONFIGURATION_PATH, JWKS_CONTENT_TYPE, JWKS_PATH
from .serviceaccount.tokenrequest import TokenRequests
from .storage import encryptionconfig, maintenance
from .storage import metrics as storage_metrics
from .storage.etcd3 import EtcdStorage, EtcdTLS, SpaceExceeded, StorageError, Unavailable
from .storage.format import NewerStorageFormat, check_storage_format
from .storage.leases import DEFAULT_REUSE_SECONDS

log = logging.getLogger(__name__)


@dataclass
class Config:
    etcd_servers: list[str] = field(default_factory=lambda: ["http://127.0.0.1:2379"])
    etcd_tls: EtcdTLS | None = None  # --etcd-cafile, --etcd-certfile, --etcd-keyfile
    advertise_address: str = "127.0.0.1:8080"
    watch_cache_size: int = 10_000
    port: int = 8080  # where it serves (the secure port when it serves HTTPS): the kubernetes Service's targetPort
    token_auth_file: str | None = None  # --token-auth-file: static bearer tokens (kube's CSV)
    anonymous_auth: bool = True  # --anonymous-auth: credential-less HTTPS requests are system:anonymous, else 401
    enable_bootstrap_token_auth: bool = False  # --enable-bootstrap-token-auth: kube-system's bootstrap token Secrets
    encryption_provider_config: str | None = None  # an EncryptionConfiguration file (encryption at rest)
    etcd_compaction_interval: float = maintenance.DEFAULT_COMPACTION_INTERVAL  # seconds; 0 disables
    etcd_max_request_bytes: int = ETCD_MAX_REQUEST_BYTES  # etcd's --max-request-bytes: larger objects are 413
    event_ttl: float = 3600.0  # --event-ttl: seconds an Event lives after its last write
    lease_reuse_duration_seconds: int = DEFAULT_REUSE_SECONDS  # --lease-reuse-duration-seconds
    scheduler_healthz_url: str = DEFAULT_SCHEDULER_HEALTHZ  # probed for ComponentStatus "scheduler"
    controller_manager_healthz_url: str = DEFAULT_CONTROLLER_MANAGER_HEALTHZ
    service_accounts: ServiceAccountConfig = field(default_factory=ServiceAccountConfig)
    disable_admission_plugins: list[str] = field(default_factory=list)  # --disable-admission-plugins
    authorization_modes: list[str] = field(default_factory=lambda: ["AlwaysAllow"])  # --authorization-mode
    audit: AuditConfig = field(default_factory=lambda: AuditConfig())


@dataclass
class AuditConfig:
    """kube-apiserver's ``--audit-*`` flags (the log backend): no policy file or no path, no audit log."""

    policy_file: str | None = None
    log_path: str | None = None  # "-": stdout
    max_age_days: int = 0
    max_backups: int = 0
    max_size_mb: int = 0


def authorizers(modes: list[str], sources: Sources, rbac: RBACAuthorizer, graph: NodeGraph) -> list[Member]:
    """``--authorization-mode``'s members, in order."""
    by_mode: dict[str, Member] = {"AlwaysAllow": AlwaysAllow(), "AlwaysDeny": AlwaysDeny(), "RBAC": rbac,
                                  "Node": NodeAuthorizer(graph, compile_rules(NODE_RULES))}
    return [by_mode[mode] for mode in modes]


def advertised_ip(config: Config) -> str:
    """The IP the ``kubernetes`` Endpoints name: the advertised address's (a wildcard or a host name: 127.0.0.1)."""
    host = config.advertise_address.rsplit(":", 1)[0].strip("[]")
    try:
        return host if not ipaddress.ip_address(host).is_unspecified else "127.0.0.1"
    except ValueError:
        return "127.0.0.1"


def kubernetes_service_objects(config: Config) -> list[BootstrapObject]:
    """``default/kubernetes`` and the Endpoints and EndpointSlice that point it at this apiserver (advertised
    address, serving port)."""
    ip = advertised_ip(config)
    return [BootstrapObject("", "services", "default", kubernetes_service(config.port)),
            BootstrapObject("", "endpoints", "default", kubernetes_endpoints(ip, config.port),
                            points_at=endpoints_address),
            BootstrapObject("discovery.k8s.io", "endpointslices", "default", kubernetes_endpoint_slice(ip, config.port),
                            points_at=endpoint_slice_address)]


def system_priority_classes() -> list[BootstrapObject]:
    """The built-in PriorityClasses, created at start-up (kube's ``scheduling/bootstrap-system-priority-classes``
    post-start hook) and again whenever one is missing."""
    return [BootstrapObject("scheduling.k8s.io", "priorityclasses", None, copy.deepcopy(pc))
            for pc in SYSTEM_PRIORITY_CLASSES]


def storage_status(err: StorageError) -> errors.StatusError:
    """The Status a storage failure answers: etcd's "database space exceeded" is passed on as kube-apiserver
    passes on an error that is not a Status (500, no reason, etcd's message); anything else is 503."""
    if isinstance(err, SpaceExceeded):
        return SpaceExceededError(str(err))
    return errors.ServiceUnavailable(f"etcd is unavailable: {err}", retry_after=1)


ETCD_DIAL_TIMEOUT = 20.0  # kube's storagebackend/factory dialTimeout
ETCD_REDIAL_INTERVAL = 0.05


class SpaceExceededError(errors.StatusError):
    """A Status with no reason (kube's StatusReasonUnknown, omitted from the JSON)."""

    code = 500
    reason = ""  # StatusError.to_status leaves an empty reason out, as kube's JSON does


async def connect_storage(storage: EtcdStorage, dial_timeout: float = ETCD_DIAL_TIMEOUT) -> None:
    """Connect to etcd, dialing again while it does not answer for up to ``dial_timeout`` (kube-apiserver's etcd
    client dials for 20 s): an apiserver started alongside its etcd, as launchers and static pods start them,
    waits for it instead of exiting."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + dial_timeout
    while True:
        try:
            await storage.connect()
            return
        except Unavailable:
            await storage.close()  # a fresh channel: gRPC's own reconnect back-off starts at a second
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(ETCD_REDIAL_INTERVAL)


async def defragment_members(config: Config, storage: EtcdStorage) -> None:
    """Defragment fragmented members before serving; each member is asked over a connection of its own."""
    if len(config.etcd_servers) == 1:
        await maintenance.defragment_if_fragmented([(config.etcd_servers[0], storage)])
        return
    members = [(server, EtcdStorage([server], tls=config.etcd_tls)) for server in config.etcd_servers]
    try:
        for _, member in members:
            await member.connect()
        await maintenance.defragment_if_fragmented(members)
    except StorageError as err:
        log.warning("etcd members not checked for fragmentation: %s", err)
    finally:
        for _, member in members:
            await member.close()


def authenticator_for(config: Config) -> RequestAuthenticator:
    """The authenticator union of ``config``; raises ``TokenFileError`` for an unusable ``--token-auth-file``."""
    tokens: list[TokenAuthenticator] = [TokenFile.load(config.token_auth_file)] if config.token_auth_file else []
    return RequestAuthenticator(tokens, anonymous=config.anonymous_auth)


def create_app(config: Config, rule_validator: RuleValidator | None = None) -> ServerSend:
    """The apiserver's ASGI app; raises ``EncryptionConfigError`` when the encryption configuration is unusable
    and ``TokenFileError`` for an unusable token file.
    ``rule_validator`` evaluates CRDs' ``x-kubernetes-validations`` (default: CEL, ``apiextensions.celrules``)."""
    authenticator = authenticator_for(config)
    audit_policy = load_policy(config.audit.policy_file) if config.audit.policy_file and config.audit.log_path \
        else None
    encryption = (encryptionconfig.load(config.encryption_provider_config)
                  if config.encryption_provider_config else None)
    storage = EtcdStorage(config.etcd_servers, tls=config.etcd_tls)
    decoder = Decoder(openapi_documents.swagger()["definitions"])
    bootstrap = [*system_namespaces(), *kubernetes_service_objects(config), *system_priority_classes(),
                 *flowcontrol.bootstrap_objects()]
    leases = MasterLeases(storage, f"{advertised_ip(config)}:{config.port}")
    probes = component_probes(config.scheduler_healthz_url, config.controller_manager_healthz_url,
                              config.etcd_servers, config.etcd_tls)
    strategies = [ComponentStatusStrategy(probes) if isinstance(s, ComponentStatusStrategy) else s
                  for s in all_strategies()]
    registry = Registry(strategies, storage, config.watch_cache_size, decoder, add_warning, bootstrap,
                        leases=leases, encryption=encryption, max_request_bytes=config.etcd_max_request_bytes,
                        ttls={"events": int(config.event_ttl), "events.events.k8s.io": int(config.event_ttl)},
                        lease_reuse_seconds=config.lease_reuse_duration_seconds)
    sources = Sources(registry)
    rbac, graph = RBACAuthorizer(sources), NodeGraph()
    configure(authorizers(config.authorization_modes, sources, rbac, graph))
    webhook_client = WebhookClient(sources)
    conditions = WebhookMatchConditions()
    accounts = service_account_config.build(config.service_accounts,
                                            lambda resource, ns, name: sources.get("", resource, ns, name),
                                            config.advertise_address, add_warning)
    authenticator.tokens.append(accounts.authenticator)  # after --token-auth-file, as kube-apiserver's union
    if config.enable_bootstrap_token_auth:  # then bootstrap tokens, as kube-apiserver's union
        authenticator.tokens.append(BootstrapTokenAuthenticator(
            lambda namespace, name: sources.get("", "secrets", namespace, name)))
    token_reviews = registry.virtual[("authentication.k8s.io", "tokenreviews")].strategy
    assert isinstance(token_reviews, TokenReviewStrategy)
    token_reviews.authenticators, token_reviews.api_audiences = authenticator.tokens, accounts.issuer.api_audiences
    service_account_admission = ([] if SERVICE_ACCOUNT_PLUGIN in config.disable_admission_plugins
                                 else [ServiceAccountAdmission(sources)])
    # kube-apiserver's order: LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultStorageClass,
    # StorageObjectInUseProtection, PersistentVolumeClaimResize, RuntimeClass, DefaultIngressClass … webhooks,
    # policies … ResourceQuota last (it charges usage).
    priority, runtime_class = Priority(sources), RuntimeClass(sources)
    admission = AdmissionChain([LimitRangerDefaults(sources), *service_account_admission, priority,
                                DefaultStorageClass(sources), StorageObjectInUseProtection(), runtime_class,
                                DefaultIngressClass(sources),
                                MutatingWebhooks(sources, webhook_client, add_warning, conditions)],
                               [EscalationCheck(sources, rbac),
                                NodeRestriction(),
                                LimitRangerValidation(sources), priority, PersistentVolumeClaimResize(sources),
                                runtime_class,
                                ValidatingAdmissionPolicies(sources, add_warning),
                                ValidatingWebhooks(sources, webhook_client, add_warning, conditions),
                                ResourceQuotaAdmission(sources, registry)])
    handler = RESTHandler(registry, admission=admission, token_requests=TokenRequests(accounts.issuer, registry))

    def served_groups() -> dict[str, Any]:
        """``/apis``: the stored groups, then the ones served without storage (metrics.k8s.io)."""
        return discovery.api_groups(registry, [metrics_api.api_group()])

    autoregister = AutoRegister(registry, served_groups, served_group_versions(served_groups()))
    policy_status = PolicyStatus(registry, TypeChecker(registry, decoder.definitions))
    flow_schema_status = flowcontrol.FlowSchemaStatus(registry)

    def publish_openapi(strategies: list[CustomResourceStrategy]) -> None:
        openapi_documents.set_custom(*custom_openapi(openapi_documents.swagger(), strategies))

    crd_controller = CRDController(registry, decoder, publish_openapi, rule_validator or CELRules(), webhook_client)
    metrics = metrics_api.MetricsAPI(registry)
    ready = {"ok": False}
    audit_backend = None
    if audit_policy is not None and config.audit.log_path:
        audit_backend = LogBackend(config.audit.log_path, max_size_mb=config.audit.max_size_mb,
                                   max_backups=config.audit.max_backups, max_age_days=config.audit.max_age_days)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await connect_storage(storage)
        try:
            await check_storage_format(storage, config.etcd_servers)
        except NewerStorageFormat as err:
            log.error("%s", err)
            await storage.close()
            raise SystemExit(1) from None  # the message above says it all: no traceback of the cause
        await defragment_members(config, storage)
        await registry.start()
        await reconcile_policy(registry)
        if "Node" in config.authorization_modes:
            graph.start(registry.get("", "pods").cache, registry.get("", "persistentvolumeclaims").cache)
        await crd_controller.start()
        autoregister.start()
        policy_status.start()
        flow_schema_status.start()
        # after readiness, off the event loop: what no request but the first OpenAPI one needs (~0.08 s of CPU from
        # the disk cache, ~0.8 s when it is built)
        openapi_build = asyncio.get_running_loop().run_in_executor(None, openapi_documents.preload)
        compactor: asyncio.Task[None] | None = None
        if config.etcd_compaction_interval > 0:
            compactor = asyncio.create_task(
                maintenance.Compactor(storage, config.etcd_compaction_interval, config.etcd_servers).run(),
                name="etcd compactor")
        ready["ok"] = True
        log.info("apiserver ready: %d resources cached", len(registry.stores))
        try:
            yield
        finally:
            ready["ok"] = False
            await asyncio.gather(openapi_build, return_exceptions=True)
            await crd_controller.stop()
            await graph.stop()
            if compactor is not None:
                compactor.cancel()
                await asyncio.gather(compactor, return_exceptions=True)
            await autoregister.stop()
            await policy_status.stop()
            await flow_schema_status.stop()
            await webhook_client.close()
            await registry.stop()
            await storage.close()
            if audit_backend is not None:
                audit_backend.shutdown()

    async def on_status_error(request: Request, err: Exception) -> Response:
        assert isinstance(err, errors.StatusError)
        return status_response(err)

    async def on_error(request: Request, err: Exception) -> Response:
        log.exception("internal error serving %s %s", request.method, request.url.path)
        return status_response(errors.InternalError(f"an error on the server ({type(err).__name__}: {err}) has "
                                                    f"prevented the request from succeeding"))

    # --- health and version ---------------------------------------------------------------------------------
    async def etcd_problem(readiness: bool) -> str | None:
        """Why the etcd check fails: not started, unreachable, or (for /readyz) an alarm that stops writes."""
        if not ready["ok"]:
            return "not ready"
        try:
            await storage.current_revision()
            return await maintenance.alarm_problem(storage) if readiness else None
        except Exception as err:  # etcd unreachable: report, keep serving
            return str(err)

    async def health(request: Request) -> Response:
        """kube-apiserver's /healthz, /livez and /readyz: one line per check, the list whenever one fails."""
        name = request.url.path.strip("/")
        problem = None if name == "livez" and ready["ok"] else await etcd_problem(name == "readyz")
        lines = ["[+]ping ok", "[+]etcd ok" if problem is None else f"[-]etcd failed: {problem}"]
        if problem is not None:
            return PlainTextResponse("\n".join(lines) + f"\n{name} check failed\n", status_code=500)
        if "verbose" in request.query_params:
            return PlainTextResponse("\n".join(lines) + f"\n{name} check passed\n")
        return PlainTextResponse("ok")

    async def debug_watches(request: Request) -> Response:
        """The watch streams this apiserver serves (handlers/watches.py)."""
        return json_response(await watches.document(await storage.current_revision()))

    async def debug_watch_deliveries(request: Request) -> Response:
        """Which watcher received which object version when (storage/deliveries.py), for `kubelab trace`."""
        return json_response(watches.deliveries(request.query_params))

    async def version(request: Request) -> Response:
        return json_response(discovery.version_info())

    # --- Prometheus metrics (authorized as the non-resource URL /metrics: system:monitoring) -------------------
    storage_metrics.collect_caches(lambda: [(store.qualified, store.cache) for store in registry.stores.values()])

    async def prometheus_metrics(request: Request) -> Response:
        return Response(process_metrics.scrape(), media_type=process_metrics.CONTENT_TYPE)

    # --- service-account issuer discovery (OpenID Connect) ----------------------------------------------------
    async def openid_configuration(request: Request) -> Response:
        return Response(accounts.discovery.configuration, media_type="application/json",
                        headers={"Cache-Control": CACHE_CONTROL})

    async def openid_jwks(request: Request) -> Response:
        return Response(accounts.discovery.jwks, media_type=JWKS_CONTENT_TYPE, headers={"Cache-Control": CACHE_CONTROL})

    # --- discovery ------------------------------------------------------------------------------------------
    def listing(group: str, version: str) -> dict[str, Any] | None:
        if group == metrics_api.GROUP:
            return metrics_api.resource_list(version)
        return discovery.resource_list(registry, group, version)

    def aggregated(request: Request, groups: list[dict[str, Any]]) -> Response | None:
        """The aggregated form of the groups (kubectl 1.27+ asks for it first), or None for the legacy one."""
        version = discovery.aggregated_version(request.headers.get("accept"))
        if version is None:
            return None
        entries = [(g["name"], [(v["version"], doc) for v in g["versions"]
                                if (doc := listing(g["name"], v["version"])) is not None]) for g in groups]
        body = orjson.dumps(discovery.aggregated(version, entries))
        return Response(body, media_type=discovery.aggregated_content_type(version))

    async def core_api(request: Request) -> Response:
        return aggregated(request, [{"name": "", "versions": [{"version": "v1"}]}]) or \
            json_response(discovery.core_versions(config.advertise_address))

    async def apis(request: Request) -> Response:
        groups = served_groups()
        return aggregated(request, groups["groups"]) or json_response(groups)

    async def core_v1(request: Request) -> Response:
        return json_response(discovery.resource_list(registry, "", "v1"))

    async def group(request: Request) -> Response:
        name = request.path_params["group"]
        doc = metrics_api.api_group() if name == metrics_api.GROUP else discovery.api_group(registry, name)
        if doc is None:
            raise errors.NotFound("the server could not find the requested resource")
        return json_response(doc)

    async def group_version(request: Request) -> Response:
        doc = listing(request.path_params["group"], request.path_params["version"])
        if doc is None:
            raise errors.NotFound("the server could not find the requested resource")
        return json_response(doc)

    # --- resources ------------------------------------------------------------------------------------------
    def pod_stream(subresource: str) -> Callable[[WebSocket], Awaitable[None]]:
        async def endpoint(websocket: WebSocket) -> None:
            await proxy.serve_stream(websocket, registry, websocket.path_params["namespace"],
                                     websocket.path_params["name"], subresource, admission)
        return endpoint

    async def not_found(request: Request) -> Response:
        raise errors.NotFound("the server could not find the requested resource")

    app = Starlette(
        routes=[*(routes.get(path, health) for path in ("/healthz", "/livez", "/readyz")),
                routes.get("/debug/watches", debug_watches),
                routes.get("/debug/watches/deliveries", debug_watch_deliveries),
                routes.get("/version", version),
                routes.get("/metrics", prometheus_metrics),
                routes.get(CONFIGURATION_PATH, openid_configuration),
                routes.get(JWKS_PATH, openid_jwks),
                routes.get("/api", core_api),
                routes.get("/apis", apis),
                routes.get("/api/v1", core_v1),
                routes.get("/apis/{group}", group),
                routes.get("/apis/{group}/{version}", group_version),
                # exec, attach and portforward are websocket upgrades too (kubectl ≥ 1.30, the Python client).
                *(WebSocketRoute(f"/api/v1/namespaces/{{namespace}}/pods/{{name}}/{subresource}",
                                 pod_stream(subresource)) for subresource in proxy.STREAMS),
                *openapi.routes,
                routes.route("/{path:path}", not_found, ["GET", "POST", "PUT", "PATCH", "DELETE"])],
        exception_handlers={errors.StatusError: on_status_error, HTTPException: routes.http_exception,
                            Exception: on_error},
        lifespan=lifespan)

    router = ResourceRouter(app, handler, registry, metrics)
    authorized: Any = authz_filter.AuthorizationMiddleware(router)
    if audit_policy is not None and audit_backend is not None:  # after authentication, before authorization
        authorized = AuditMiddleware(authorized, audit_policy, audit_backend)
    return ServerSend(RequestMetrics(WarningMiddleware(AuthenticationMiddleware(authorized, authenticator,
                                                                                check=authz_filter.check))))


class ResourceRouter:
    """The hot path: resource requests (``/api/v1/…``, ``/apis/{group}/{version}/…``) go straight to the REST
    handler as plain ASGI, without the app's routing and middleware layers (FastAPI's, when measured: a quarter of
    the CPU per request); everything else — discovery, health, OpenAPI, websockets, lifespan — is the
    Starlette app's. ``metrics.k8s.io`` is not stored: its requests go to the metrics API."""

    def __init__(self, app: Starlette, handler: RESTHandler, registry: Registry,
                 metrics: metrics_api.MetricsAPI) -> None:
        self.app = app
        self.handler = handler
        self.registry = registry
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            parts = scope["path"].split("/", 5)
            # ['', 'api', 'v1', resource…] or ['', 'apis', group, version, resource…]
            if len(parts) > 3 and parts[1] == "api" and parts[2] == "v1" and parts[3]:
                await self._serve(scope, receive, send, "", "v1", scope["path"][len("/api/v1/"):])
                return
            if len(parts) > 4 and parts[1] == "apis" and parts[4]:
                prefix = f"/apis/{parts[2]}/{parts[3]}/"
                await self._serve(scope, receive, send, parts[2], parts[3], scope["path"][len(prefix):])
                return
        await self.app(scope, receive, send)

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any, group: str, version: str,
                     path: str) -> None:
        request = Request(scope, receive)
        try:
            request = Request(scope, limit_body(scope, receive))
            info = parse_path(group, version, path)
            if group == metrics_api.GROUP:
                response = await self.metrics.handle(request, info)
            elif group == "" and info.resource == "bindings" and info.name is None and request.method == "POST":
                response = await bind(request, self.registry.get("", "pods"), info.namespace, None,
                                      await request.body(), self.handler.admission)
            else:
                response = await self.handler.handle(request, info)
        except errors.StatusError as err:
            response = status_response(err)
        except StorageError as err:
            log.warning("storage unavailable serving %s %s: %s", request.method, scope["path"], err)
            response = status_response(storage_status(err))
        except Exception as err:
            log.exception("internal error serving %s %s", request.method, scope["path"])
            response = status_response(errors.InternalError(
                f"an error on the server ({type(err).__name__}: {err}) has prevented the request from succeeding"))
        await response(scope, receive, send)
