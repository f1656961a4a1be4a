"""``python -m scheduler`` / ``kubelab scheduler``: bind pending pods to nodes, as kube-scheduler.

* ``--config FILE``: a KubeSchedulerConfiguration (scheduler/config.py); an invalid one is reported on stderr
  and the process exits with status 1.
* ``--leader-elect`` (default true, as kube-scheduler): informers run in every instance, but only the holder of
  the Lease ``kube-system/kube-scheduler`` schedules. The leader annotates the Lease with
  ``kubelab.io/debug-endpoint: http://<addr>:<port>`` so ``kubelab explain`` finds it. Losing the lease ends the
  process with status 1 (as kube-scheduler); SIGTERM/SIGINT release it and exit 0.
* SIGTERM/SIGINT end the process with status 0 at any time, also while the apiserver is unreachable and the
  informers have not synced yet (releasing the Lease then takes at most the renew deadline).
* An HTTP server (``--healthz-port``; 0 picks a free port, negative turns it off) answers ``/healthz`` and
  ``/livez`` (the process serves), ``/readyz`` (also its informers have synced: kube-scheduler's
  ``sched-handler-sync`` check, 500 until then), ``GET /debug/explain/{namespace}/{name}``: the pod's last
  attempt as JSON (404 if unknown);
  ``POST /debug/whatif``: where pods would go after a drain, cordon, taint, node deletion or new pods, decided by
  this scheduler's profiles on a copy of its cache (scheduler/whatif.py; ``kubelab what-if``);
  ``GET /debug/informers``: its informers' counters (kubeclient's ``InformerStats``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import signal
import socket
import sys
import uuid
from typing import Any

from aiohttp import web

from apimachinery import errors
from apimachinery.process import start_component
from kubeclient import Clientset, LeaderElector, metrics
from kubeclient.informer import snapshot as informer_snapshot
from kubeclient.resources import POD_DISRUPTION_BUDGETS

from .config import ConfigError, Configuration, LeaderElection, load_config, parse_duration
from .runner import Runner
from .scheduler import Scheduler
from .whatif import ChangeError, parse_change, simulate

log = logging.getLogger("scheduler")
DEBUG_ENDPOINT_ANNOTATION = "kubelab.io/debug-endpoint"


def _bool(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {value}")


def _duration(value: str) -> float:
    try:
        return parse_duration(value, "duration")
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kubelab scheduler",
                                description="The kubelab scheduler: filters and scores nodes, binds pods.")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--config", help="KubeSchedulerConfiguration YAML file")
    p.add_argument("--scheduler-name", help="pods' spec.schedulerName to serve (without --config)")
    p.add_argument("--leader-elect", type=_bool, nargs="?", const=True, default=None,
                   help="elect a leader through a Lease before scheduling (default true)")
    p.add_argument("--leader-elect-resource-name", help="the Lease's name (default kube-scheduler)")
    p.add_argument("--leader-elect-resource-namespace", help="the Lease's namespace (default kube-system)")
    p.add_argument("--leader-elect-lease-duration", type=_duration)
    p.add_argument("--leader-elect-renew-deadline", type=_duration)
    p.add_argument("--leader-elect-retry-period", type=_duration)
    p.add_argument("--bind-address", default="127.0.0.1", help="address of the healthz/debug server")
    p.add_argument("--healthz-port", type=int, default=0, help="healthz/debug port (0: any free port, <0: off)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    return p.parse_args(argv)


def configuration(args: argparse.Namespace) -> Configuration:
    """The config file (or defaults), with explicit flags on top."""
    config = load_config(args.config) if args.config else Configuration()
    profiles = config.profiles
    if args.scheduler_name:
        profiles = (dataclasses.replace(profiles[0], scheduler_name=args.scheduler_name), *profiles[1:])
    le = config.leader_election
    overrides = {k: v for k, v in (
        ("leader_elect", args.leader_elect), ("resource_name", args.leader_elect_resource_name),
        ("resource_namespace", args.leader_elect_resource_namespace),
        ("lease_duration", args.leader_elect_lease_duration), ("renew_deadline", args.leader_elect_renew_deadline),
        ("retry_period", args.leader_elect_retry_period)) if v is not None}
    return Configuration(profiles, config.percentage_of_nodes_to_score, LeaderElection(**{**le.__dict__, **overrides}))


class DebugServer:
    """``/healthz``, ``/metrics`` and ``/debug/explain/{namespace}/{name}`` over aiohttp."""

    def __init__(self, scheduler: Scheduler, host: str, port: int) -> None:
        self.scheduler = scheduler
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def endpoint(self) -> str:
        host = socket.gethostname() if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    async def _explain(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        attempt = self.scheduler.diagnoses.get(key)
        if attempt is None:
            return web.json_response({"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
                                      "message": f"no scheduling attempt recorded for pod {key}"}, status=404)
        return web.json_response(attempt.to_dict())

    async def _readyz(self, request: web.Request) -> web.Response:
        """kube-scheduler's ``/readyz``: ``ok``, or 500 naming the check that fails (``?verbose`` lists them all)."""
        synced = self.scheduler.handlers_synced()
        if synced and "verbose" not in request.query:
            return web.Response(text="ok")
        check = "[+]sched-handler-sync ok" if synced else "[-]sched-handler-sync failed: reason withheld"
        lines = ["[+]ping ok", check]
        tail = "readyz check passed" if synced else "readyz check failed"
        return web.Response(status=200 if synced else 500, text="\n".join([*lines, tail]) + "\n")

    @staticmethod
    async def _informers(request: web.Request) -> web.Response:
        return web.json_response(informer_snapshot("kube-scheduler"))

    async def _whatif(self, request: web.Request) -> web.Response:
        try:
            change = parse_change(await request.json())
        except (ValueError, ChangeError) as err:
            return web.json_response({"kind": "Status", "status": "Failure", "reason": "BadRequest", "code": 400,
                                      "message": str(err)}, status=400)
        pdbs: list[dict[str, Any]] = []
        if change.action == "drain":
            try:
                pdbs = (await self.scheduler.client.resource(POD_DISRUPTION_BUDGETS).list()).get("items") or []
            except errors.StatusError as err:
                return web.json_response(err.to_status(), status=err.code)
        profiles = {name: runner.profile for name, runner in self.scheduler.runners.items()}

        def runner_for(pod: dict[str, Any]) -> Runner | None:
            profile = profiles.get(pod.get("spec", {}).get("schedulerName") or "default-scheduler")
            return None if profile is None else Runner(profile, self.scheduler.handle)

        return web.json_response(simulate(change, self.scheduler.cache, pdbs, runner_for))

    async def start(self) -> None:
        app = web.Application()
        for path in ("/healthz", "/livez"):
            app.router.add_get(path, _ok)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/debug/explain/{namespace}/{name}", self._explain)
        app.router.add_post("/debug/whatif", self._whatif)
        app.router.add_get("/debug/informers", self._informers)
        app.router.add_get("/metrics", metrics.serve)  # scheduler_* (scheduler.metrics), rest_client_*, process_*
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"healthz: http://127.0.0.1:{self.port}/healthz", file=sys.stderr, flush=True)  # for the launcher

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


async def annotate_lease(client: Clientset, le: LeaderElection, endpoint: str) -> None:
    # get + update, not patch: kube's system:kube-scheduler role may only get and update its lease.
    try:
        for _ in range(5):
            lease = await client.leases.get(le.resource_name, le.resource_namespace)
            lease["metadata"].setdefault("annotations", {})[DEBUG_ENDPOINT_ANNOTATION] = endpoint
            try:
                await client.leases.update(lease)
                return
            except errors.Conflict:  # the elector renewed it meanwhile
                continue
    except Exception as err:  # explain is a convenience; scheduling goes on
        log.warning("could not annotate lease %s/%s: %s", le.resource_namespace, le.resource_name, err)


async def run(args: argparse.Namespace, config: Configuration) -> int:
    client = Clientset.from_flags(master=args.master, kubeconfig=args.kubeconfig, user_agent="kube-scheduler")
    scheduler = Scheduler(client, list(config.profiles))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = DebugServer(scheduler, args.bind_address, args.healthz_port) if args.healthz_port >= 0 else None
    if server is not None:
        await server.start()
    tasks: list[asyncio.Task[None]] = []
    le = config.leader_election
    try:
        tasks = await scheduler.start_informers(stop)  # returns early on SIGTERM, even with the apiserver away
        if stop.is_set():
            return 0
        if not le.leader_elect:
            await scheduler.schedule(stop)
            return 0

        async def lead(stopped: asyncio.Event) -> None:
            log.info("started leading: scheduling")
            if server is not None:
                await annotate_lease(client, le, server.endpoint)
            await scheduler.schedule(stopped)

        identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        elector = LeaderElector(client.leases, name=le.resource_name, namespace=le.resource_namespace,
                                identity=identity, lease_duration=le.lease_duration, renew_deadline=le.renew_deadline,
                                retry_period=le.retry_period, on_started_leading=lead,
                                on_new_leader=lambda who: log.info("new leader elected: %s", who))
        log.info("attempting to acquire leader lease %s/%s as %s", le.resource_namespace, le.resource_name, identity)
        await elector.run(stop)
        if not stop.is_set():
            log.error("leaderelection lost")
            return 1
        return 0
    finally:
        stop.set()
        await scheduler.close(tasks)
        if server is not None:
            await server.stop()
        await client.close()
        log.info("scheduler stopped (pid %d)", os.getpid())


async def _ok(_: web.Request) -> web.Response:
    """The health endpoints: a scheduler whose loop answers is healthy."""
    return web.Response(text="ok")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_component(args.verbosity)
    try:
        config = configuration(args)
    except ConfigError as err:
        print(f"error: invalid scheduler configuration: {err}", file=sys.stderr)
        sys.exit(1)
    sys.exit(asyncio.run(run(args, config)))


if __name__ == "__main__":
    main()
