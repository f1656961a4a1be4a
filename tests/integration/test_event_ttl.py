"""``--event-ttl``: Events expire that long after their last write (kube-apiserver stores them under etcd leases)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson

from conftest import api_only

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"


def core_event(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
            "reason": "Started", "message": "started", "type": "Normal", "source": {"component": "kubelet"},
            "count": 1, "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:05Z"}


def gone_after(client: httpx.Client, path: str, timeout: float = 30) -> float:
    """Seconds until ``path`` answers 404."""
    began = time.monotonic()
    while client.get(path).status_code != 404:
        assert time.monotonic() - began < timeout, f"{path} is still there after {timeout} s"
        time.sleep(0.1)
    return time.monotonic()


def test_events_are_deleted_event_ttl_after_their_last_write() -> None:
    """Both API groups' Events go ``--event-ttl`` after they were written (a patch starts the time again), from
    reads and lists, and watchers see them DELETED; other objects stay."""
    with api_only("--event-ttl", "4s") as cluster, httpx.Client(base_url=cluster.api_url, timeout=30) as c:
        rv = c.get(CORE).json()["metadata"]["resourceVersion"]
        written = time.monotonic()
        for name in ("ttl-core", "ttl-patched"):
            assert c.post(CORE, json=core_event(name)).status_code == 201
        assert c.post(V1, json={
            "metadata": {"name": "ttl-v1"}, "eventTime": "2026-01-02T03:04:05.000000Z", "action": "Sync",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "reason": "Synced",
            "type": "Normal", "regarding": {"kind": "Pod", "namespace": "default", "name": "web"}}).status_code == 201
        kept = c.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "ttl-kept"}})
        assert kept.status_code == 201
        time.sleep(2)
        assert c.get(f"{CORE}/ttl-core").status_code == 200  # not before its time
        patched = c.patch(f"{CORE}/ttl-patched", json={"count": 2},
                          headers={"Content-Type": "application/merge-patch+json"})
        assert patched.status_code == 200, patched.text

        core_gone = gone_after(c, f"{CORE}/ttl-core")
        assert core_gone - written >= 4
        assert c.get(f"{CORE}/ttl-patched").status_code == 200  # its four seconds started at the patch
        gone_after(c, f"{V1}/ttl-v1")
        gone_after(c, f"{CORE}/ttl-patched")
        assert c.get(CORE).json()["items"] == [] and c.get(V1).json()["items"] == []
        assert c.get("/api/v1/namespaces/default/configmaps/ttl-kept").status_code == 200

        deleted: list[str] = []
        with c.stream("GET", CORE, params={"watch": "true", "resourceVersion": rv}) as stream:
            for line in stream.iter_lines():
                event = orjson.loads(line)
                if event["type"] == "DELETED":
                    deleted.append(event["object"]["metadata"]["name"])
                if len(deleted) == 3:
                    break
        assert sorted(deleted) == ["ttl-core", "ttl-patched", "ttl-v1"]
