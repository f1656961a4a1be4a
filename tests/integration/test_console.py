"""The web console (``kubelab ui``) in headless Chromium on a live cluster: this module's own etcd and apiserver
(HTTPS with kubeadm's PKI, and kubelab up's add-ons), a controller-manager (replicationcontroller), a scheduler and
two real kubelets (process runtime) on its plain port, and the console as a client like any other: over HTTPS as
``kubelab:console`` (its client certificate from the cluster CA), with only the read rights kubelab.addons grants.
The browser is driven over the DevTools protocol (support/browser.py); pages update over server-sent events, so
the test reads the DOM without reloading. Each screenshot is checked (a PNG of a real size, not a blank page) and
kept as a test artifact in ``$KUBELAB_TEST_ARTIFACTS/console`` (``.ci/run``: ``.artifacts/console``), else in a
temporary directory the test prints (shown on failure)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl, api_only
from kubelab.clusterpki import CONSOLE, ClusterPKI
from kubelab.kubeconfig import write_kubeconfig
from support.artifacts import artifacts_dir, check_png
from support.browser import Browser, chromium
from support.controllers import controller_manager_fixture
from support.kubelet import running_node
from support.process import ComponentProcess
from support.scheduler import SchedulerProcess, debug_endpoint
from support.wait import wait_for

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (Debian's chromium package)")

manager = controller_manager_fixture("replicationcontroller")


@pytest.fixture(scope="module")
def secure() -> Iterator[tuple[str, str, ClusterPKI]]:
    """This module's API-only ``kubelab.Cluster``: HTTPS (kubeadm's PKI) beside the plain port, kubelab up's add-ons
    applied; (its plain URL, its HTTPS URL, the PKI). Its own, so that its watch list is this cluster's alone."""
    with api_only() as cluster:
        assert cluster.running.pki is not None
        yield cluster.api_url, cluster.secure_url, cluster.running.pki


@pytest.fixture(scope="module")
def api_url(secure: tuple[str, str, ClusterPKI]) -> str:
    """The plain port of this module's apiserver, for the components and the test (the session's is not used)."""
    return secure[0]


@pytest.fixture(scope="module")
def cluster(api_url: str, secure: tuple[str, str, ClusterPKI], module_ns: str,
            tmp_path_factory: pytest.TempPathFactory, manager: Any) -> Iterator[dict[str, Any]]:
    """Two kubelets ``<ns>-n1``/``-n2``, a scheduler, and the console (``python -m kubelab.ui``) pointed at them,
    reaching the apiserver over HTTPS as ``kubelab:console``."""
    ns, root = module_ns, tmp_path_factory.mktemp("console")
    _, https_url, pki = secure
    conf = write_kubeconfig(root / "console.conf", https_url, ca=pki.ca_cert, client=pki.client(CONSOLE))
    lease, name = f"ks-{uuid.uuid4().hex[:8]}", f"sched-{ns}"
    nodes = [f"{ns}-n1", f"{ns}-n2"]
    client = httpx.Client(base_url=api_url, timeout=30)
    scheduler = SchedulerProcess(api_url, root / "scheduler.log", f"--leader-elect-resource-name={lease}",
                                 f"--scheduler-name={name}")
    console: ComponentProcess | None = None
    for sub in ("n1", "n2"):
        (root / sub).mkdir()
    try:
        with running_node(api_url, nodes[0], root / "n1"), running_node(api_url, nodes[1], root / "n2"):
            endpoint = debug_endpoint(client, lease)
            console = ComponentProcess("kubelab.ui", https_url, root / "console.log", "--kubeconfig", str(conf),
                                       "--port", "0", "--component", f"scheduler={endpoint}")
            log = root / "console.log"
            url = wait_for(lambda: (m := re.search(r"console: (http://\S+)", log.read_text())) and m.group(1),
                           timeout=60, what="the console's URL")
            for node in nodes:
                wait_for(lambda node=node: client.get(f"/api/v1/nodes/{node}").status_code == 200, what=node)
            yield {"ns": ns, "nodes": nodes, "scheduler": name, "url": url, "client": client, "logs": root}
    finally:
        if console is not None:
            console.stop()
        scheduler.stop()
        for node in nodes:
            client.delete(f"/api/v1/nodes/{node}")
        client.close()


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts_dir("console", tmp_path_factory)


def shot(browser: Browser, path: Path) -> None:
    """A screenshot of the page as it is now, kept at ``path``: a PNG of a real size, not a blank page."""
    check_png(browser.screenshot(path))


@pytest.fixture(autouse=True)
def announce_screens(screens: Path, cluster: dict[str, Any]) -> None:
    """Printed in every test's set-up, so a failure report shows where its screenshots and logs are."""
    print(f"console screenshots: {screens}; console {cluster['url']}, logs in {cluster['logs']}")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


def create_rc(client: httpx.Client, ns: str, scheduler: str, nodes: list[str]) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}}
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
          "spec": {"replicas": 2, "selector": {"app": "web"},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"schedulerName": scheduler, "affinity": affinity,
                                         "terminationGracePeriodSeconds": 1,
                                         "containers": [{"name": "c", "image": "busybox",
                                                         "command": ["sleep", "600"]}]}}}}
    resp = client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc)
    assert resp.status_code == 201, resp.text


RUNNING = "[...document.querySelectorAll('.pod[data-pod^=\"{ns}/web-\"][data-phase=\"Running\"]')].length"


def test_pods_appear_and_run_without_reload_then_pod_and_watch_pages(cluster: dict[str, Any], browser: Browser,
                                                                     screens: Path) -> None:
    ns, client = cluster["ns"], cluster["client"]
    browser.goto(cluster["url"])
    browser.wait_js("document.querySelector('#live').className === 'on'", what="the live stream")
    for node in cluster["nodes"]:
        browser.wait_js(f"!!document.querySelector('.node[data-node=\"{node}\"]')", what=f"node {node} shown")
    browser.evaluate("window.notReloaded = true")
    create_rc(client, ns, cluster["scheduler"], cluster["nodes"])
    browser.wait_js(f"document.querySelectorAll('.pod[data-pod^=\"{ns}/web-\"]').length === 2",
                    what="the RC's two pods shown")
    shot(browser, screens / "1-pods-appear.png")
    browser.wait_js(RUNNING.format(ns=ns) + " === 2", timeout=60, what="both pods Running in the page")
    assert browser.evaluate("window.notReloaded === true")  # the same document all along: no reload
    placed = browser.evaluate(f"[...document.querySelectorAll('.pod[data-pod^=\"{ns}/web-\"]')]"
                              ".map(a => a.closest('.node').dataset.node)")
    assert set(placed) <= set(cluster["nodes"])
    shot(browser, screens / "2-pods-running.png")

    # One pod: the 13 steps with their latencies, and the scheduler's per-node table.
    pod = browser.evaluate(f"document.querySelector('.pod[data-pod^=\"{ns}/web-\"]').getAttribute('href')")
    browser.goto(cluster["url"].rstrip("/") + pod)
    browser.wait_js("document.querySelectorAll('#trace tr.step').length > 0", timeout=60, what="the trace")
    numbers = browser.evaluate(
        "[...document.querySelectorAll('#trace tr.step td:first-child')].map(t => t.textContent)")
    assert {int(re.match(r"\d+", n).group()) for n in numbers} == set(range(1, 14)), numbers  # type: ignore[union-attr]
    latencies = browser.evaluate("[...document.querySelectorAll('#trace .latency')].map(t => t.textContent)")
    assert sum(1 for text in latencies if re.fullmatch(r"[+-]\d+\.\d+ m?s", text)) >= 12, latencies  # µs records
    browser.wait_js("document.querySelectorAll('#nodes-table tr').length > 1", what="the scheduler's node table")
    rows = browser.evaluate("[...document.querySelectorAll('#nodes-table tr')].map(r => r.textContent)")
    for node in cluster["nodes"]:
        assert any(node in row and "feasible" in row for row in rows), rows
    assert browser.evaluate("document.querySelectorAll('#nodes-table tr.chosen').length") == 1
    shot(browser, screens / "3-pod-page.png")

    # The watch streams: the scheduler's and the kubelets' watches, with their lag; the components' informers.
    browser.goto(cluster["url"].rstrip("/") + "/watches")
    browser.wait_js("document.querySelectorAll('#watches tr').length > 1", what="the apiserver's watch table")
    headers = browser.evaluate("[...document.querySelectorAll('#watches th')].map(t => t.textContent)")
    assert "lag (revisions)" in headers and "lag (s)" in headers
    cells = "[...document.querySelectorAll('#watches tr')].map(r => [...r.children].map(c => c.textContent))"
    rows = browser.wait_js(f"(rows => rows.some(r => r[1] === 'kube-scheduler' && r[2] === 'pods') && "
                           f"rows.some(r => r[1] === 'kubelet' && r[2] === 'pods') && rows)({cells})",
                           what="the scheduler's and the kubelets' pod watches")
    lag = headers.index("lag (revisions)")
    assert all(re.fullmatch(r"\d+", r[lag]) for r in rows[1:]), rows
    informers = browser.wait_js(
        "(rows => rows.some(r => r[0] === 'scheduler' && r[1] === 'pods') && "
        f"rows.some(r => r[0] === 'kubelet {cluster['nodes'][0]}') && rows)"
        "([...document.querySelectorAll('#informers tr')].map(r => [...r.children].map(c => c.textContent)))",
        what="the scheduler's and a kubelet's informers")
    assert any(r[0] == "scheduler" and r[1] == "nodes" for r in informers)
    shot(browser, screens / "4-watches.png")


def test_whatif_page_asks_the_scheduler(cluster: dict[str, Any], browser: Browser, screens: Path) -> None:
    browser.goto(cluster["url"].rstrip("/") + "/whatif")
    node = cluster["nodes"][0]
    browser.evaluate(f"document.querySelector('[name=action]').value = 'cordon';"
                     f"document.querySelector('[name=node]').value = '{node}';"
                     "document.querySelector('#whatif button').click()")
    answer = browser.wait_js("(t => t && t !== 'asking the scheduler…' && t)(document.querySelector('#answer')"
                             ".textContent)", what="the scheduler's answer")
    assert "No pod would move." in answer
    shot(browser, screens / "5-whatif.png")


def test_unschedulable_pod_page_shows_the_nearest_node_and_the_change(cluster: dict[str, Any], browser: Browser,
                                                                      screens: Path) -> None:
    ns, client = cluster["ns"], cluster["client"]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": cluster["nodes"]}]}]}}}
    body = {"metadata": {"name": "huge"},
            "spec": {"schedulerName": cluster["scheduler"], "affinity": affinity,
                     "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"],
                                     "resources": {"requests": {"cpu": "4000"}}}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    browser.goto(f"{cluster['url'].rstrip('/')}/pod/{ns}/huge")
    text = browser.wait_js("(t => t.includes('Nearest node:') && t)(document.querySelector('#explain').textContent)",
                           timeout=60, what="the nearest node")
    assert "Unschedulable" in text and "Insufficient cpu" in text
    assert re.search(rf"Nearest node: {ns}-n[12] \(1 change away\)", text), text
    assert re.search(r"lacks \d+ cpu: the pod requests \S+, ", text), text
    shot(browser, screens / "6-unschedulable.png")


def test_the_console_is_a_client_with_its_own_identity(cluster: dict[str, Any], kubectl: Kubectl) -> None:
    """Its watches are kubelab:console's — a client certificate over HTTPS, not the plain port's system:unsecured —
    and RBAC lets it read what its pages show and nothing more."""
    doc = cluster["client"].get("/debug/watches").json()
    mine = [w for w in doc["items"] if w["user"] == "kubelab:console"]
    assert {"nodes", "pods", "events"} <= {w["resource"] for w in mine}, doc["items"]
    assert all(w["userAgent"].startswith("kubelab-console") for w in mine)
    assert not [w for w in doc["items"] if "console" in w["userAgent"] and w["user"] != "kubelab:console"]

    def can(*args: str) -> bool:
        done = kubectl("auth", "can-i", *args, "--as", CONSOLE.user, check=False)
        assert done.stdout.strip() in ("yes", "no"), done.stderr
        return done.stdout.strip() == "yes"
    for allowed in (("watch", "pods", "-A"), ("list", "nodes"), ("get", "leases", "-n", "kube-system"),
                    ("list", "replicationcontrollers", "-A"), ("get", "/debug/watches/deliveries")):
        assert can(*allowed), allowed
    for refused in (("create", "pods"), ("delete", "nodes"), ("get", "secrets", "-A"), ("patch", "nodes"),
                    ("get", "/metrics")):
        assert not can(*refused), refused


def test_a_nodes_cordon_and_taints_show_live(cluster: dict[str, Any], browser: Browser, screens: Path) -> None:
    """kubectl cordon and taint as they happen: the node's column turns cordoned and lists its taint, no reload."""
    client, node = cluster["client"], cluster["nodes"][1]
    browser.goto(cluster["url"])
    browser.wait_js("document.querySelector('#live').className === 'on'", what="the live stream")
    column = f"document.querySelector('.node[data-node=\"{node}\"]')"
    browser.wait_js(f"(n => n && n.querySelector('.meta').textContent.includes('Ready=True'))({column})",
                    what=f"{node} shown Ready")
    browser.evaluate("window.notReloaded = true")
    merge = {"Content-Type": "application/merge-patch+json"}
    taint = {"key": "dedicated", "value": "audit", "effect": "NoSchedule"}
    try:
        resp = client.patch(f"/api/v1/nodes/{node}", json={"spec": {"unschedulable": True, "taints": [taint]}},
                            headers=merge)
        assert resp.status_code == 200, resp.text
        meta = browser.wait_js(f"(n => n && n.classList.contains('cordoned') && n.querySelector('.meta').textContent)"
                               f"({column})", what=f"{node} shown cordoned")
        assert "cordoned" in meta
        taints = browser.wait_js(f"(t => t.length && t)([...{column}.querySelectorAll('.taint')]"
                                 ".map(t => t.textContent))", what=f"{node}'s taint shown")
        assert taints == ["dedicated=audit:NoSchedule"]
        assert browser.evaluate("window.notReloaded === true")
        shot(browser, screens / "7-cordoned-tainted.png")
    finally:
        client.patch(f"/api/v1/nodes/{node}", json={"spec": {"unschedulable": None, "taints": None}}, headers=merge)
    browser.wait_js(f"(n => n && !n.classList.contains('cordoned') && !n.querySelector('.taint'))({column})",
                    what=f"{node} shown uncordoned and untainted")


def test_the_event_stream_shows_a_new_event_live(cluster: dict[str, Any], browser: Browser, screens: Path) -> None:
    ns, client = cluster["ns"], cluster["client"]
    browser.goto(cluster["url"].rstrip("/") + "/events")
    browser.wait_js("document.querySelector('#live').className === 'on'", what="the live stream")
    browser.evaluate("window.notReloaded = true")
    reason = f"Audit{uuid.uuid4().hex[:6]}"
    event = {"metadata": {"name": f"probe.{uuid.uuid4().hex[:8]}"}, "type": "Warning", "reason": reason,
             "message": "written by the console test", "count": 1, "source": {"component": "console-test"},
             "involvedObject": {"kind": "Pod", "namespace": ns, "name": "probe", "apiVersion": "v1"}}
    assert client.post(f"/api/v1/namespaces/{ns}/events", json=event).status_code == 201
    row = browser.wait_js(f"(rows => rows.find(r => r[2] === '{reason}'))([...document.querySelectorAll("
                          "'#events tr')].map(r => [...r.children].map(c => c.textContent)))",
                          what="the new event in the stream")
    assert row[1:] == ["Warning", reason, f"{ns} Pod/probe", "console-test", "written by the console test", "1"], row
    assert browser.evaluate("window.notReloaded === true")
    shot(browser, screens / "8-events.png")


def test_pages_let_go_of_their_streams(cluster: dict[str, Any], browser: Browser) -> None:
    """A reader goes from page to page: each page's server-sent events stream is closed when it is left (also for
    the back/forward cache), else the browser's six connections per server run out and the seventh page hangs."""
    url = cluster["url"].rstrip("/")
    for page in ("/", "/watches", "/whatif", "/events", "/", "/watches", "/whatif", "/events", "/"):
        browser.goto(url + page)
        browser.wait_js("document.querySelector('#live').className === 'on'", what=f"{page} live")
