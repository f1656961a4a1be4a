"""The controller-manager: flags, the controller registry, leader election and the process lifecycle.

Like kube-controller-manager:

* ``--controllers`` picks controllers by name (``*`` = all on by default, ``foo`` on, ``-foo`` off); the old
  short names (``replicaset``, ``podgc`` …) are accepted as aliases.
* With ``--leader-elect`` (the default) several managers may run; only the holder of the Lease
  ``--leader-elect-resource-namespace``/``--leader-elect-resource-name`` (``kube-system/kube-controller-manager``)
  runs controllers.  Losing the lease ends the process with status 1 (kube-controller-manager exits too, so
  a supervisor restarts it clean); SIGTERM/SIGINT stop the controllers, release the lease and exit 0.
* All controllers share one ``InformerFactory``: one watch and one cache per resource.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from controllers.support.base import Controller
from controllers.support.healthz import HealthServer
from kubeclient import Clientset, InformerFactory, LeaderElector
from kubeclient.config import build_config

log = logging.getLogger("controllers")


@dataclass
class Context:
    """What a controller factory gets: the API, the shared informers and the parsed flags."""

    clientset: Clientset
    factory: InformerFactory
    options: argparse.Namespace


Factory = Callable[[Context], Controller | None]  # None: the flags turn the controller off


def _replicaset(ctx: Context) -> Controller:
    from controllers.replicaset import ReplicaSetController
    return ReplicaSetController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_replicaset_syncs)


def _replication(ctx: Context) -> Controller:
    from controllers.replication import new_replication_controller
    return new_replication_controller(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_rc_syncs)


def _deployment(ctx: Context) -> Controller:
    from controllers.deployment import DeploymentController
    return DeploymentController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_deployment_syncs)


def _nodelifecycle(ctx: Context) -> Controller:
    from controllers.nodelifecycle import NodeLifecycleController
    o = ctx.options
    return NodeLifecycleController(ctx.clientset, ctx.factory, grace_period=o.node_monitor_grace_period,
                                   monitor_period=o.node_monitor_period,
                                   startup_grace_period=o.node_startup_grace_period)


def _tainteviction(ctx: Context) -> Controller:
    from controllers.tainteviction import TaintEvictionController
    return TaintEvictionController(ctx.clientset, ctx.factory)


def _podgc(ctx: Context) -> Controller:
    from controllers.podgc import PodGCController
    return PodGCController(ctx.clientset, ctx.factory, terminated_pod_threshold=ctx.options.terminated_pod_gc_threshold)


def _garbagecollector(ctx: Context) -> Controller:
    from controllers.garbagecollector import GarbageCollector
    return GarbageCollector(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_gc_syncs)


def _namespace(ctx: Context) -> Controller:
    from controllers.namespace import NamespaceController
    return NamespaceController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_namespace_syncs)


def _serviceaccount(ctx: Context) -> Controller:
    from controllers.serviceaccount import ServiceAccountsController
    return ServiceAccountsController(ctx.clientset, ctx.factory)


def _endpoint(ctx: Context) -> Controller:
    from controllers.endpoints import EndpointController
    return EndpointController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_endpoint_syncs)


def _endpointslice(ctx: Context) -> Controller:
    from controllers.endpointslice import EndpointSliceController
    o = ctx.options
    return EndpointSliceController(ctx.clientset, ctx.factory, workers=o.concurrent_service_endpoint_syncs,
                                   max_endpoints_per_slice=o.max_endpoints_per_slice)


def _endpointslicemirroring(ctx: Context) -> Controller:
    from controllers.endpointslicemirroring import EndpointSliceMirroringController
    return EndpointSliceMirroringController(ctx.clientset, ctx.factory,
                                            workers=ctx.options.mirroring_concurrent_service_endpoint_syncs)


def _disruption(ctx: Context) -> Controller:
    from controllers.disruption import DisruptionController
    return DisruptionController(ctx.clientset, ctx.factory)


def _job(ctx: Context) -> Controller:
    from controllers.job import JobController
    o = ctx.options
    return JobController(ctx.clientset, ctx.factory, workers=o.concurrent_job_syncs,
                         backoff_base=o.job_pod_failure_backoff)


def _ttlafterfinished(ctx: Context) -> Controller:
    from controllers.ttlafterfinished import TTLAfterFinishedController
    workers = ctx.options.concurrent_ttl_after_finished_syncs
    return TTLAfterFinishedController(ctx.clientset, ctx.factory, workers=workers)


def _cronjob(ctx: Context) -> Controller:
    from controllers.cronjob import CronJobController
    return CronJobController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_cron_job_syncs)


def _daemonset(ctx: Context) -> Controller:
    from controllers.daemonset import DaemonSetController
    return DaemonSetController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_daemonset_syncs)


def _statefulset(ctx: Context) -> Controller:
    from controllers.statefulset import StatefulSetController
    return StatefulSetController(ctx.clientset, ctx.factory, workers=ctx.options.concurrent_statefulset_syncs)


def _horizontal(ctx: Context) -> Controller:
    from controllers.horizontal import HorizontalController
    o = ctx.options
    return HorizontalController(ctx.clientset, ctx.factory, workers=o.concurrent_horizontal_pod_autoscaler_syncs,
                                sync_period=o.horizontal_pod_autoscaler_sync_period,
                                downscale_stabilization=timedelta(
                                    seconds=o.horizontal_pod_autoscaler_downscale_stabilization),
                                tolerance=o.horizontal_pod_autoscaler_tolerance,
                                cpu_initialization_period=timedelta(
                                    seconds=o.horizontal_pod_autoscaler_cpu_initialization_period),
                                initial_readiness_delay=timedelta(
                                    seconds=o.horizontal_pod_autoscaler_initial_readiness_delay))


def _nodeipam(ctx: Context) -> Controller | None:
    from controllers.nodeipam import NodeIpamController
    o = ctx.options
    if not o.allocate_node_cidrs:  # kube-controller-manager does not start it either
        return None
    return NodeIpamController(ctx.clientset, ctx.factory, cluster_cidr=o.cluster_cidr,
                              node_cidr_mask_size=o.node_cidr_mask_size)


def _resourcequota(ctx: Context) -> Controller:
    from controllers.resourcequota import ResourceQuotaController
    o = ctx.options
    return ResourceQuotaController(ctx.clientset, ctx.factory, workers=o.concurrent_resource_quota_syncs,
                                   resync_period=o.resource_quota_sync_period)


def _persistentvolume(ctx: Context) -> Controller:
    from controllers.persistentvolume import PersistentVolumeController
    return PersistentVolumeController(ctx.clientset, ctx.factory)


def _pvcprotection(ctx: Context) -> Controller:
    from controllers.volumeprotection import PVCProtectionController
    return PVCProtectionController(ctx.clientset, ctx.factory)


def _pvprotection(ctx: Context) -> Controller:
    from controllers.volumeprotection import PVProtectionController
    return PVProtectionController(ctx.clientset, ctx.factory)


def _volumeexpand(ctx: Context) -> Controller:
    from controllers.volumeexpand import ExpandController
    return ExpandController(ctx.clientset, ctx.factory)
def _rootcacertpublisher(ctx: Context) -> Controller | None:
    from controllers.rootcacertpublisher import RootCACertPublisher
    if not ctx.options.root_ca_file:  # kube-controller-manager always has a CA; kubelab's plain-HTTP clusters do not
        log.info("no --root-ca-file: root-ca-certificate-publisher-controller not started")
        return None
    with open(ctx.options.root_ca_file, "rb") as f:
        return RootCACertPublisher(ctx.clientset, ctx.factory, f.read())


def _clusterroleaggregation(ctx: Context) -> Controller:
    from controllers.clusterroleaggregation import ClusterRoleAggregationController
    return ClusterRoleAggregationController(ctx.clientset, ctx.factory)


def _csrsigning(ctx: Context) -> Controller | None:
    from controllers.csrsigning import Authority, CSRSigningController
    o = ctx.options
    if not (o.cluster_signing_cert_file and o.cluster_signing_key_file):
        log.warning("certificatesigningrequest-signing-controller not started: no --cluster-signing-cert-file "
                    "and --cluster-signing-key-file")
        return None
    authority = Authority.load(o.cluster_signing_cert_file, o.cluster_signing_key_file, o.cluster_signing_duration)
    return CSRSigningController(ctx.clientset, ctx.factory, authority)


def _csrapproving(ctx: Context) -> Controller:
    from controllers.csrapproving import CSRApprovingController
    return CSRApprovingController(ctx.clientset, ctx.factory)


def _bootstrapsigner(ctx: Context) -> Controller:
    from controllers.bootstrapsigner import BootstrapSigner
    return BootstrapSigner(ctx.clientset, ctx.factory)


def _tokencleaner(ctx: Context) -> Controller:
    from controllers.tokencleaner import TokenCleaner
    return TokenCleaner(ctx.clientset, ctx.factory)


# name → (aliases, factory), in start order (kube-controller-manager's names since 1.28).
CONTROLLERS: dict[str, tuple[tuple[str, ...], Factory]] = {
    "replicationcontroller-controller": (("replicationcontroller",), _replication),
    "replicaset-controller": (("replicaset",), _replicaset),
    "deployment-controller": (("deployment",), _deployment),
    "node-ipam-controller": (("nodeipam", "nodeipam-controller"), _nodeipam),
    "daemonset-controller": (("daemonset",), _daemonset),
    "statefulset-controller": (("statefulset",), _statefulset),
    "job-controller": (("job",), _job),
    "cronjob-controller": (("cronjob",), _cronjob),
    "ttl-after-finished-controller": (("ttl-after-finished",), _ttlafterfinished),
    "node-lifecycle-controller": (("nodelifecycle",), _nodelifecycle),
    "taint-eviction-controller": ((), _tainteviction),
    "pod-garbage-collector-controller": (("podgc",), _podgc),
    "garbage-collector-controller": (("garbagecollector",), _garbagecollector),
    "namespace-controller": (("namespace",), _namespace),
    "serviceaccount-controller": (("serviceaccount",), _serviceaccount),
    "root-ca-certificate-publisher-controller": (("root-ca-cert-publisher",), _rootcacertpublisher),
    "endpoints-controller": (("endpoint", "endpoint-controller"), _endpoint),
    "endpointslice-controller": (("endpointslice",), _endpointslice),
    "endpointslice-mirroring-controller": (("endpointslicemirroring",), _endpointslicemirroring),
    "disruption-controller": (("disruption",), _disruption),
    "resourcequota-controller": (("resourcequota",), _resourcequota),
    "horizontal-pod-autoscaler-controller": (("horizontalpodautoscaling",), _horizontal),
    "persistentvolume-binder-controller": (("persistentvolume-binder",), _persistentvolume),
    "persistentvolume-expander-controller": (("persistentvolume-expander",), _volumeexpand),
    "persistentvolumeclaim-protection-controller": (("pvc-protection",), _pvcprotection),
    "persistentvolume-protection-controller": (("pv-protection",), _pvprotection),
    "clusterrole-aggregation-controller": (("clusterrole-aggregation",), _clusterroleaggregation),
    "certificatesigningrequest-signing-controller": (("csrsigning",), _csrsigning),
    "certificatesigningrequest-approving-controller": (("csrapproving",), _csrapproving),
    "bootstrap-signer-controller": (("bootstrapsigner",), _bootstrapsigner),
    "token-cleaner-controller": (("tokencleaner",), _tokencleaner),
}
# kube-controller-manager's ``ControllersDisabledByDefault``: ``*`` leaves them off; name them to run them (kubeadm
# passes ``--controllers=*,bootstrapsigner,tokencleaner``, and so does `kubelab up`).
DISABLED_BY_DEFAULT = frozenset({"bootstrap-signer-controller", "token-cleaner-controller"})


def canonical_name(name: str) -> str:
    for canonical, (aliases, _) in CONTROLLERS.items():
        if name == canonical or name in aliases:
            return canonical
    raise ValueError(f'"{name}" is not in the list of known controllers')


# Started before the others: a fresh cluster's Nodes wait for their podCIDRs (and `kubelab up` for the Nodes).
STARTED_FIRST = ("node-ipam-controller",)


def enabled_controllers(spec: list[str]) -> list[str]:
    """Resolve ``--controllers`` (``*``, ``name``, ``-name``) to the canonical names to run, in start order."""
    explicit_on: set[str] = set()
    explicit_off: set[str] = set()
    star = False
    for item in spec:
        item = item.strip()
        if not item:
            continue
        if item == "*":
            star = True
        elif item.startswith("-"):
            explicit_off.add(canonical_name(item[1:]))
        else:
            explicit_on.add(canonical_name(item))
    return [name for name in CONTROLLERS
            if name not in explicit_off and (name in explicit_on or (star and name not in DISABLED_BY_DEFAULT))]


async def run_controllers(clientset: Clientset, options: argparse.Namespace, stop: asyncio.Event) -> None:
    """Build the enabled controllers over one informer factory and run them until ``stop`` is set; with
    ``--use-service-account-credentials`` each writes as its own service account (``credentials``).

    Each controller runs (and its informers start) as soon as it is built, as kube's start functions ``go Run``
    each one: with service-account credentials the last one is built only once ~30 accounts and tokens are made,
    and a fresh cluster's Nodes wait for the node-ipam controller (``STARTED_FIRST``), whose account comes first."""
    factory = InformerFactory(clientset)
    ctx = Context(clientset, factory, options)
    credentials = None
    if options.use_service_account_credentials:
        from controllers.support.credentials import ServiceAccountCredentials
        credentials = ServiceAccountCredentials(clientset, build_config(
            master=options.master, kubeconfig=options.kubeconfig, user_agent="kube-controller-manager"))
    enabled = enabled_controllers(options.controllers)
    order = [*(name for name in STARTED_FIRST if name in enabled), *(n for n in enabled if n not in STARTED_FIRST)]
    built: dict[str, Controller] = {}
    runs: list[asyncio.Task[None]] = []

    async def launch(name: str) -> None:
        own = ctx if credentials is None else Context(await credentials.clientset(name), factory, options)
        controller = CONTROLLERS[name][1](own)
        if controller is None:
            return
        built[name] = controller
        factory.start(stop)  # its informers
        runs.append(asyncio.create_task(controller.run(stop), name=f"run {controller.name}"))

    if credentials is not None:
        credentials.prepare(order)
        runs.append(asyncio.create_task(credentials.run(stop), name="service account tokens"))
    launches = [asyncio.create_task(launch(name), name=f"build {name}") for name in order]
    building: asyncio.Future[Any] = asyncio.gather(*launches)
    stopping: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        # a stop while accounts are still being made (a cluster stopped right after its Nodes got their podCIDRs)
        # is not kept waiting for the rest of them
        await asyncio.wait([building, stopping], return_when=asyncio.FIRST_COMPLETED)
        if building.done():
            building.result()  # a failed build ends the manager
            log.info("started controllers: %s", ", ".join(built[name].name for name in enabled if name in built))
            await asyncio.gather(*runs)
    finally:
        stopping.cancel()
        for task in launches:  # a failed build: the others are not left building
            task.cancel()
        await asyncio.gather(*launches, return_exceptions=True)
        stop.set()
        await asyncio.gather(*runs, return_exceptions=True)
        await factory.shutdown()
        if credentials is not None:
            await credentials.close()
        for c in built.values():
            recorder = getattr(c, "recorder", None)
            if recorder is not None:
                await recorder.close()


async def run(options: argparse.Namespace) -> int:
    """The whole process: returns its exit status."""
    clientset = Clientset.from_flags(master=options.master, kubeconfig=options.kubeconfig,
                                     user_agent="kube-controller-manager")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    elector: LeaderElector | None = None
    health: HealthServer | None = None
    if options.healthz_port >= 0:
        health = HealthServer(options.healthz_port, {"ping": lambda: True}, host=options.bind_address)
        await health.start()
    try:
        if not options.leader_elect:
            await run_controllers(clientset, options, stop)
            return 0
        identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        elector = LeaderElector(
            clientset.leases, name=options.leader_elect_resource_name,
            namespace=options.leader_elect_resource_namespace, identity=identity,
            lease_duration=options.leader_elect_lease_duration, renew_deadline=options.leader_elect_renew_deadline,
            retry_period=options.leader_elect_retry_period,
            on_started_leading=lambda stopped: run_controllers(clientset, options, stopped),
            on_new_leader=lambda who: log.info("new leader elected: %s", who))
        log.info("attempting to acquire leader lease %s/%s as %s", options.leader_elect_resource_namespace,
                 options.leader_elect_resource_name, identity)
        await elector.run(stop)
        if not stop.is_set():
            log.error("leaderelection lost")
            return 1
        return 0
    finally:
        if health is not None:
            await health.stop()
        await clientset.close()
        log.info("controller-manager stopped (pid %d)", os.getpid())
