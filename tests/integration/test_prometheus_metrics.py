"""Prometheus ``/metrics`` on every component, scraped from live processes and read with Prometheus' own text
parser, as a person checking a dashboard would: a POST of a pod counts in ``apiserver_request_total`` as kube
counts it, an open watch shows in ``apiserver_longrunning_requests``, a scheduled pod in
``scheduler_schedule_attempts_total{result="scheduled"}``, the ReplicaSet controller's queue in ``workqueue_*``,
a started pod in ``kubelet_running_pods``, kube-proxy's syncs in ``kubeproxy_sync_proxy_rules_*``, a DNS query in
CoreDNS's ``coredns_dns_*``, and the console's client in ``rest_client_*``; ``/metrics`` is authorized as kube
authorizes it."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubelab.etcd import free_port
from support.clusterdns import DnsProcess, loopback_address
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.process import ComponentProcess
from support.proxy import start_proxy
from support.scheduler import SchedulerProcess
from support.wait import wait_for

SCHEDULER_NAME = "metrics-scheduler"
Samples = list[tuple[str, dict[str, str], float]]


def scrape(url: str, **kwargs: Any) -> Samples:
    """Every sample of ``url`` as Prometheus parses it (a malformed exposition fails here)."""
    resp = httpx.get(url, timeout=10, **kwargs)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(resp.text)
            for s in family.samples]


def value(samples: Samples, metric: str, **labels: str) -> float:
    """The sum of ``metric``'s samples carrying ``labels`` (0 when there is none)."""
    return sum(v for n, ls, v in samples if n == metric and all(ls.get(k) == want for k, want in labels.items()))


def names(samples: Samples) -> set[str]:
    return {n for n, _, _ in samples}


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Node, str, str]]:
    """A namespace, a kubelet, a scheduler (its own scheduler name, so it binds only this module's pods) and a
    controller-manager running the ReplicaSet controller: (namespace, node, scheduler URL, manager URL)."""
    ns = f"t-{uuid.uuid4().hex[:10]}"
    tmp: Path = tmp_path_factory.mktemp("prometheus")
    scheduler_port, manager_port = free_port(), free_port()
    with httpx.Client(base_url=api_url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        with running_node(api_url, f"{ns}-node", tmp) as node:
            scheduler = SchedulerProcess(api_url, tmp / "scheduler.log", "--leader-elect=false",
                                         "--scheduler-name", SCHEDULER_NAME, "--healthz-port", str(scheduler_port))
            manager = ControllerManager(api_url, tmp / "controller-manager.log", "--leader-elect=false",
                                        "--controllers=replicaset", "--healthz-port", str(manager_port))
            try:
                wait_for(lambda: client.get(f"/api/v1/nodes/{node.name}").status_code == 200, what="the node")
                yield ns, node, f"http://127.0.0.1:{scheduler_port}", f"http://127.0.0.1:{manager_port}"
            finally:
                client.delete(f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})
                client.delete(f"/apis/apps/v1/namespaces/{ns}/replicasets")
                scheduler.stop()
                manager.stop()


def pod(name: str, node: str | None = None) -> dict[str, Any]:
    """A pod for this module's scheduler (with ``node``), else one that no scheduler takes."""
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1,
                            "schedulerName": SCHEDULER_NAME if node is not None else "nobody",
                            "containers": [{"name": "main", "image": "python",
                                            "command": ["python3", "-c", "import time; time.sleep(100000)"]}]}
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# --- apiserver ---------------------------------------------------------------------------------------------------
def test_apiserver_counts_requests_with_kube_verbs_and_scopes(api_url: str, ns: str) -> None:
    url = f"{api_url}/metrics"
    before = scrape(url)
    created = {"verb": "POST", "resource": "pods", "code": "201", "scope": "resource", "group": "", "version": "v1",
               "subresource": "", "dry_run": "", "component": "apiserver"}
    with httpx.Client(base_url=api_url) as client:
        assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("counted")).status_code == 201
        assert client.post(f"/api/v1/namespaces/{ns}/pods", params={"dryRun": "All"},
                           json=pod("dry")).status_code == 201
        assert client.get(f"/api/v1/namespaces/{ns}/pods/counted").status_code == 200
        assert client.get(f"/api/v1/namespaces/{ns}/pods").status_code == 200
        assert client.get("/api/v1/pods").status_code == 200
        assert client.get(f"/api/v1/namespaces/{ns}/pods/missing").status_code == 404
        applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}}
        assert client.patch(f"/api/v1/namespaces/{ns}/configmaps/applied", params={"fieldManager": "test"},
                            content=json.dumps(applied),
                            headers={"Content-Type": "application/apply-patch+yaml"}).status_code == 201
        assert client.get("/healthz").status_code == 200
    after = scrape(url)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("apiserver_request_total", **created) == 1
    assert delta("apiserver_request_total", **{**created, "dry_run": "All"}) == 1
    assert delta("apiserver_request_total", verb="GET", resource="pods", scope="resource", code="200") >= 1
    assert delta("apiserver_request_total", verb="GET", resource="pods", scope="resource", code="404") >= 1
    assert delta("apiserver_request_total", verb="LIST", resource="pods", scope="namespace", code="200") >= 1
    assert delta("apiserver_request_total", verb="LIST", resource="pods", scope="cluster", code="200") >= 1
    assert delta("apiserver_request_total", verb="APPLY", resource="configmaps", code="201") == 1
    assert delta("apiserver_request_total", verb="GET", subresource="/healthz", scope="", code="200") >= 1
    created_duration = {k: v for k, v in created.items() if k != "code"}
    assert delta("apiserver_request_duration_seconds_count", **created_duration) == 1
    assert value(after, "apiserver_request_duration_seconds_bucket", **created_duration, le="60.0") >= 1
    assert delta("etcd_request_duration_seconds_count", operation="create", type="pods") >= 1
    assert delta("etcd_requests_total", operation="create", type="pods") >= 1
    assert delta("apiserver_watch_cache_events_received_total", resource="pods") >= 1
    assert value(after, "apiserver_watch_cache_initializations_total", resource="pods") >= 1
    assert value(after, "apiserver_watch_cache_resource_version", resource="pods") > 0
    with httpx.Client(base_url=api_url) as client:
        stored = len(client.get("/api/v1/pods").json()["items"])
    assert value(scrape(url), "apiserver_storage_objects", resource="pods") == stored
    assert value(after, "apiserver_storage_objects", resource="deployments.apps") >= 0
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_info",
            "apiserver_current_inflight_requests"} <= names(after)


def test_an_open_watch_is_long_running_and_counts_its_events(api_url: str, ns: str) -> None:
    url = f"{api_url}/metrics"
    watching = {"verb": "WATCH", "resource": "configmaps", "scope": "namespace", "group": "", "version": "v1"}
    before = value(scrape(url), "apiserver_longrunning_requests", **watching)
    events_before = value(scrape(url), "apiserver_watch_events_total", group="", version="v1", kind="ConfigMap")
    opened, seen = threading.Event(), threading.Event()

    def watch() -> None:
        with httpx.stream("GET", f"{api_url}/api/v1/namespaces/{ns}/configmaps",
                          params={"watch": "true", "timeoutSeconds": "30"}, timeout=40) as resp:
            opened.set()
            for line in resp.iter_lines():
                if '"watched"' in line:
                    seen.set()
                    return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    assert opened.wait(10)
    assert wait_for(lambda: value(scrape(url), "apiserver_longrunning_requests", **watching) == before + 1,
                    what="the watch among the long-running requests")
    httpx.post(f"{api_url}/api/v1/namespaces/{ns}/configmaps",
               json={"metadata": {"name": "watched"}}).raise_for_status()
    assert seen.wait(10)
    thread.join(10)
    wait_for(lambda: value(scrape(url), "apiserver_longrunning_requests", **watching) == before,
             what="the watch to end")
    after = scrape(url)
    assert value(after, "apiserver_watch_events_total", group="", version="v1", kind="ConfigMap") > events_before
    assert value(after, "apiserver_watch_events_sizes_count", group="", version="v1", kind="ConfigMap") >= 1
    assert value(after, "apiserver_request_total", code="200", **watching) >= 1  # counted once it ended
    assert value(after, "apiserver_watch_cache_events_dispatched_total", resource="configmaps") >= 1


def test_metrics_is_authorized_as_a_non_resource_url(api_url: str) -> None:
    anonymous = httpx.get(f"{api_url}/metrics", headers={"Impersonate-User": "system:anonymous",
                                                          "Impersonate-Group": "system:unauthenticated"})
    assert anonymous.status_code == 403
    assert anonymous.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    monitoring = {"Impersonate-User": "prometheus", "Impersonate-Group": "system:monitoring"}
    assert "apiserver_request_total" in names(scrape(f"{api_url}/metrics", headers=monitoring))


# --- scheduler, kubelet, controller-manager ----------------------------------------------------------------------
def test_a_scheduled_pod_counts_in_the_scheduler_and_runs_on_the_kubelet(
        api_url: str, cluster: tuple[str, Node, str, str]) -> None:
    ns, node, scheduler_url, _ = cluster
    wait_for(lambda: _reachable(f"{scheduler_url}/healthz"), what="the scheduler's healthz")
    before = scrape(f"{scheduler_url}/metrics")
    assert value(before, "scheduler_pending_pods", queue="active") >= 0
    assert {f"scheduler_pending_pods{{queue={q}}}" for q in ("active", "backoff", "unschedulable", "gated")} <= {
        f"scheduler_pending_pods{{queue={ls['queue']}}}" for n, ls, _ in before if n == "scheduler_pending_pods"}
    with httpx.Client(base_url=api_url) as client:
        assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("scheduled", node.name)).status_code == 201
        wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/scheduled").json()
                 .get("status", {}).get("phase") == "Running", what="the pod Running")
    after = scrape(f"{scheduler_url}/metrics")
    scheduled = {"result": "scheduled", "profile": SCHEDULER_NAME}
    assert value(after, "scheduler_schedule_attempts_total", **scheduled) == \
        value(before, "scheduler_schedule_attempts_total", **scheduled) + 1
    assert value(after, "scheduler_scheduling_attempt_duration_seconds_count", **scheduled) >= 1
    assert value(after, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") >= 1
    assert value(after, "scheduler_queue_incoming_pods_total", queue="active", event="PodAdd") >= 1
    assert value(after, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                 status="Success", profile=SCHEDULER_NAME) >= 1
    host = api_url.removeprefix("http://")
    assert value(after, "rest_client_requests_total", method="POST", code="201", host=host) >= 1  # the Binding
    assert value(after, "rest_client_request_duration_seconds_count", verb="POST", host=host) >= 1

    # The kubelet's API is HTTPS (a self-signed certificate without --tls-cert-file; anonymous allowed, as kube's
    # kubelet defaults, without --anonymous-auth=false)
    kubelet = scrape(f"https://127.0.0.1:{node.port}/metrics", verify=False)
    assert value(kubelet, "kubelet_node_name", node=node.name) == 1
    assert value(kubelet, "kubelet_running_pods") >= 1
    assert value(kubelet, "kubelet_running_containers", container_state="running") >= 1
    assert value(kubelet, "kubelet_started_pods_total") >= 1
    assert value(kubelet, "kubelet_pod_start_duration_seconds_count") >= 1
    assert value(kubelet, "kubelet_pod_start_sli_duration_seconds_count") >= 1
    assert value(kubelet, "kubelet_pod_worker_duration_seconds_count", operation_type="create") >= 1
    assert value(kubelet, "kubelet_runtime_operations_total", operation_type="start_container") >= 1
    assert value(kubelet, "rest_client_requests_total", method="PATCH", code="200") >= 1  # status writes
    resource = httpx.get(f"https://127.0.0.1:{node.port}/metrics/resource", verify=False)  # kept beside it
    assert resource.status_code == 200 and "container_cpu_usage_seconds_total" in resource.text


def test_the_replicaset_controllers_queue_has_kube_workqueue_metrics(
        api_url: str, cluster: tuple[str, Node, str, str]) -> None:
    ns, _, _, manager_url = cluster
    wait_for(lambda: _reachable(f"{manager_url}/healthz"), what="the controller-manager's healthz")
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]}}}}
    with httpx.Client(base_url=api_url) as client:
        assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs).status_code == 201
        wait_for(lambda: len(client.get(f"/api/v1/namespaces/{ns}/pods",
                                        params={"labelSelector": "app=web"}).json()["items"]) == 2,
                 what="the ReplicaSet's pods")
    samples = scrape(f"{manager_url}/metrics")
    assert value(samples, "workqueue_adds_total", name="replicaset") >= 1
    assert value(samples, "workqueue_work_duration_seconds_count", name="replicaset") >= 1
    assert value(samples, "workqueue_queue_duration_seconds_count", name="replicaset") >= 1
    assert value(samples, "workqueue_depth", name="replicaset") >= 0
    for series in ("workqueue_depth", "workqueue_unfinished_work_seconds",
                   "workqueue_longest_running_processor_seconds", "workqueue_retries_total"):
        assert any(n == series and ls == {"name": "replicaset"} for n, ls, _ in samples), series
    assert value(samples, "rest_client_requests_total", method="POST", code="201") >= 2  # the two pods


def _reachable(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


# --- kube-proxy, the cluster DNS, the console ---------------------------------------------------------------------
def test_kube_proxy_dns_and_console_serve_their_metrics(api_url: str, ns: str, tmp_path: Path) -> None:
    proxy_port = free_port()
    proxy = start_proxy(api_url, tmp_path / "proxy.log", "--proxy-mode", "userspace", "--metrics-port",
                        str(proxy_port))
    dns = DnsProcess(api_url, tmp_path / "dns.log", loopback_address(), "--publish-service=false",
                     "--forward", "127.0.0.1:9")
    console = ComponentProcess("console", api_url, tmp_path / "console.log", "--port", "0")
    try:
        samples = scrape(f"http://127.0.0.1:{proxy_port}/metrics")
        assert value(samples, "kubeproxy_sync_proxy_rules_duration_seconds_count") >= 1  # /healthz: synced once
        assert value(samples, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") > 0
        assert "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds" in names(samples)
        assert value(samples, "rest_client_requests_total", method="GET", code="200") >= 3  # its three lists

        dns.wait_ready()
        name = f"nothing-here.{ns}.svc.cluster.local."
        assert dns.query(name, "A").rcode() == 3  # NXDOMAIN, answered from the cluster's records
        samples = scrape(f"http://127.0.0.1:{dns.health_port}/metrics")
        server = f"dns://{dns.address}:{dns.port}"
        assert value(samples, "coredns_dns_requests_total", server=server, zone="cluster.local.", proto="udp",
                     type="A") >= 1
        assert value(samples, "coredns_dns_responses_total", server=server, zone="cluster.local.", rcode="NXDOMAIN",
                     plugin="kubernetes") >= 1
        assert value(samples, "coredns_dns_request_duration_seconds_count", server=server, type="A") >= 1
        assert value(samples, "coredns_build_info") == 1

        url = wait_for(lambda: (m := re.search(r"console: (http://\S+)", console.log())) and m.group(1).rstrip("/"),
                       what="the console's URL")
        wait_for(lambda: value(scrape(f"{url}/metrics"), "rest_client_requests_total", method="GET") >= 1,
                 what="the console's lists counted")
        assert "console_event_streams" in names(scrape(f"{url}/metrics"))
    finally:
        console.stop()
        assert dns.stop() == 0, dns.log()
        proxy.stop()
