"""The record of watch deliveries: bounded, filtered by object, resource and revision, newest kept by limit."""

from __future__ import annotations

from apiserver.storage.deliveries import Deliveries, Watcher


def test_the_ring_keeps_only_the_last_capacity_deliveries() -> None:
    ring = Deliveries(capacity=3)
    scheduler = Watcher("system:kube-scheduler", "kube-scheduler/v1.32.0", "pods", requested=1.0, started=1.5)
    ring.record(scheduler, 2.0, [("ADDED", f"ns/p{i}", 10 + i) for i in range(5)])
    assert [d["name"] for d in ring.document()["items"]] == ["p2", "p3", "p4"]
    assert ring.document()["capacity"] == 3


def test_selectors_and_limit() -> None:
    ring = Deliveries()
    cache = Watcher("system:apiserver", "watch-cache", "pods", requested=0.0, watch_cache=True)
    kubelet = Watcher("system:node:n1", "kubelet", "pods", requested=1.0, started=1.25)
    nodes = Watcher("system:node:n1", "kubelet", "nodes", requested=1.0, started=1.25)
    ring.record(cache, 3.0, [("ADDED", "ns/web", 7)])
    ring.record(kubelet, 3.5, [("ADDED", "ns/web", 7), ("MODIFIED", "ns/web", 9), ("ADDED", "other/web", 8)])
    ring.record(nodes, 3.6, [("MODIFIED", "n1", 10)])
    web = ring.document(namespace="ns", name="web")["items"]
    assert [(d["resourceVersion"], d["watcher"]["watchCache"]) for d in web] == [("7", True), ("7", False),
                                                                                 ("9", False)]
    assert web[1] == {"time": "1970-01-01T00:00:03.500000Z", "type": "ADDED", "resource": "pods", "namespace": "ns",
                      "name": "web", "resourceVersion": "7",
                      "watcher": {"user": "system:node:n1", "userAgent": "kubelet", "watchCache": False,
                                  "requestReceived": "1970-01-01T00:00:01.000000Z",
                                  "started": "1970-01-01T00:00:01.250000Z"}}
    assert [d["name"] for d in ring.document(namespace="other")["items"]] == ["web"]
    (node,) = ring.document(resource="nodes")["items"]
    assert (node["namespace"], node["name"]) == ("", "n1")  # a cluster-scoped object's key is its name
    assert [d["resourceVersion"] for d in ring.document(resource_version=7, limit=1)["items"]] == ["7"]
    assert ring.document(resource_version=7, limit=1)["items"][0]["watcher"]["userAgent"] == "kubelet"  # newest
