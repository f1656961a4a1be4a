"""``GET /debug/watches`` on the session apiserver: every watch stream it serves, who opened it, what it selects, the
last resourceVersion sent and its lag behind etcd; ``/debug/watches/deliveries``: when etcd's transaction stored an
object version and which watcher (the watch cache, a stream's user and agent) received it, to the µs. Non-resource
paths that RBAC guards like kube's debug paths (alice is refused with kube's words, the plain port's system:masters
user is let in)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx

from conftest import Kubectl
from support.wait import wait_for

AGENT = "debug-watches-test/1.0"


def watches(client: httpx.Client) -> list[dict[str, Any]]:
    resp = client.get("/debug/watches")
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert doc["kind"] == "WatchList" and doc["etcdRevision"] > 0
    return [w for w in doc["items"] if w["userAgent"] == AGENT]


def _watch(api_url: str, ns: str, lines: list[dict[str, Any]], stop: threading.Event) -> None:
    with httpx.Client(base_url=api_url, timeout=None, headers={"User-Agent": AGENT}) as c, \
            c.stream("GET", f"/api/v1/namespaces/{ns}/configmaps",
                     params={"watch": "true", "labelSelector": "app=w", "timeoutSeconds": "30"}) as resp:
        lines_iter: Iterator[str] = resp.iter_lines()
        for line in lines_iter:
            if line:
                lines.append(json.loads(line))
            if stop.is_set():
                return


def test_debug_watches_lists_streams_with_their_position_and_lag(api_url: str, client: httpx.Client,
                                                                   ns: str) -> None:
    received: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = threading.Thread(target=_watch, args=(api_url, ns, received, stop), daemon=True)
    thread.start()
    (mine,) = wait_for(lambda: watches(client), what="the test's watch in /debug/watches")
    assert (mine["resource"], mine["namespace"], mine["labelSelector"]) == ("configmaps", ns, "app=w")
    assert mine["user"] == "system:unsecured" and mine["eventsSent"] == 0
    for i in range(3):
        body = {"metadata": {"name": f"c{i}", "labels": {"app": "w"}}, "data": {"i": str(i)}}
        assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json=body).status_code == 201
    wait_for(lambda: len(received) == 3, what="three events")
    last_rv = received[-1]["object"]["metadata"]["resourceVersion"]
    (mine,) = wait_for(lambda: [w for w in watches(client) if w["eventsSent"] == 3], what="three events counted")
    assert mine["resourceVersion"] == last_rv
    assert mine["lag"] == {"revisions": 0, "seconds": 0.0}  # nothing queued, the cache is at etcd's revision
    assert mine["eventsPerSecond"] > 0
    delivered = client.get("/debug/watches/deliveries", params={"namespace": ns, "name": "c1"}).json()
    assert delivered["kind"] == "WatchDeliveryList" and delivered["capacity"] == 20_000
    rv = received[1]["object"]["metadata"]["resourceVersion"]
    (cache,) = [d for d in delivered["items"] if d["watcher"]["watchCache"]]
    assert (cache["type"], cache["resource"], cache["namespace"], cache["name"], cache["resourceVersion"]) == \
        ("ADDED", "configmaps", ns, "c1", rv)
    (stream,) = [d for d in delivered["items"] if d["watcher"]["userAgent"] == AGENT]
    (stored,) = [d for d in delivered["items"] if d["type"] == "STORED"]  # etcd's transaction answering the POST
    assert (stored["resourceVersion"], stored["watcher"]["userAgent"]) == (rv, "etcd-txn")
    assert stream["resourceVersion"] == rv and stream["watcher"]["user"] == "system:unsecured"
    assert cache["time"] <= stream["time"] and len(stream["time"]) == len("2026-12-06T03:04:05.123456Z")
    assert stream["watcher"]["requestReceived"] <= stream["watcher"]["started"] <= stream["time"]
    of_rv = client.get("/debug/watches/deliveries", params={"namespace": ns, "resourceVersion": rv}).json()["items"]
    assert sorted(d["watcher"]["userAgent"] for d in of_rv) == sorted([AGENT, "watch-cache", "etcd-txn"])
    everything = client.get("/debug/watches/deliveries", params={"namespace": ns}).json()["items"]
    assert len(everything) == 9  # three configmaps, each stored, received by the cache, sent to the test
    newest = client.get("/debug/watches/deliveries", params={"namespace": ns, "limit": "2"}).json()["items"]
    assert newest == everything[-2:]
    bad = client.get("/debug/watches/deliveries", params={"limit": "0"})
    assert bad.status_code == 400 and bad.json()["kind"] == "Status", bad.text
    assert 'limit: Invalid value: "0"' in bad.json()["message"]
    stop.set()
    client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "end", "labels": {"app": "w"}}})
    thread.join(10)
    wait_for(lambda: not watches(client), what="the closed watch to leave the list")


def test_debug_watches_is_guarded_by_rbac(kubectl: Kubectl) -> None:
    for path, kind in (("/debug/watches", "WatchList"), ("/debug/watches/deliveries", "WatchDeliveryList")):
        refused = kubectl("get", "--raw", path, "--as", "alice", check=False)
        assert refused.returncode != 0
        assert f'User "alice" cannot get path "{path}"' in refused.stderr, refused.stderr
        allowed = kubectl("get", "--raw", path)
        assert json.loads(allowed.stdout)["kind"] == kind
