"""Watch streams: start positions, selectors (entering/leaving), bookmarks, timeouts, 410 and restarts."""

from __future__ import annotations

import json
import queue
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import api_only
from support.builders import make_pod
from support.watch import WatchReader


def pods_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def label(client: httpx.Client, ns: str, name: str, **labels: str | None) -> dict:
    resp = client.patch(pods_path(ns, name), json={"metadata": {"labels": labels}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_watch_without_rv_sends_state_then_changes(api_url: str, client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("before").build())
    w = WatchReader(api_url, pods_path(ns))
    try:
        assert w.status_code == 200
        first = w.next()
        assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "before"
        client.post(pods_path(ns), json=make_pod("after").build())
        label(client, ns, "after", x="1")
        client.delete(pods_path(ns, "after"))
        events = [(e["type"], e["object"]["metadata"]["name"]) for e in w.take(3)]
        assert events == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "after")]
    finally:
        w.close()


def test_watch_from_rv_is_exclusive_and_ordered(api_url: str, client: httpx.Client, ns: str) -> None:
    created = client.post(pods_path(ns), json=make_pod("a").build()).json()
    rv = created["metadata"]["resourceVersion"]
    label(client, ns, "a", step="1")
    label(client, ns, "a", step="2")
    w = WatchReader(api_url, pods_path(ns), {"resourceVersion": rv})
    try:
        events = w.take(2)
        assert [e["object"]["metadata"]["labels"]["step"] for e in events] == ["1", "2"]
        assert all(e["type"] == "MODIFIED" for e in events)
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs) and rvs[0] > int(rv)
    finally:
        w.close()


def test_label_selector_enter_and_leave(api_url: str, client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("m").label(role="cache").build())
    w = WatchReader(api_url, pods_path(ns), {"labelSelector": "role=web", "resourceVersion": "0"})
    try:
        label(client, ns, "m", role="web")  # enters the selection
        entered = w.next()
        assert entered["type"] == "ADDED" and entered["object"]["metadata"]["labels"]["role"] == "web"
        label(client, ns, "m", role="db")  # leaves it
        left = w.next()
        assert left["type"] == "DELETED"
        assert left["object"]["metadata"]["labels"]["role"] == "web"  # the last state that matched
        assert int(left["object"]["metadata"]["resourceVersion"]) > int(entered["object"]["metadata"]
                                                                        ["resourceVersion"])
        with pytest.raises(queue.Empty):
            w.next(timeout=0.5)
    finally:
        w.close()


def test_field_selector_watch_on_node_name(api_url: str, client: httpx.Client, ns: str) -> None:
    w = WatchReader(api_url, "/api/v1/pods", {"fieldSelector": "spec.nodeName=watch-node-1", "resourceVersion": "0"})
    try:
        client.post(pods_path(ns), json=make_pod("elsewhere").node("watch-node-2").build())
        client.post(pods_path(ns), json=make_pod("here").node("watch-node-1").build())
        event = w.next()
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "here"
    finally:
        w.close()


def test_watch_single_object_path(api_url: str, client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("one").build())
    client.post(pods_path(ns), json=make_pod("two").build())
    w = WatchReader(api_url, f"/api/v1/watch/namespaces/{ns}/pods/one", {"watch": "false"})
    try:
        assert w.next()["object"]["metadata"]["name"] == "one"
        label(client, ns, "two", x="1")
        label(client, ns, "one", x="1")
        event = w.next()
        assert event["type"] == "MODIFIED" and event["object"]["metadata"]["name"] == "one"
    finally:
        w.close()


def test_timeout_seconds_ends_the_stream(api_url: str, ns: str) -> None:
    w = WatchReader(api_url, pods_path(ns), {"timeoutSeconds": "1", "resourceVersion": "0"})
    try:
        assert w.next(timeout=10) is None
    finally:
        w.close()


def test_bookmarks(api_url: str, client: httpx.Client, ns: str) -> None:
    w = WatchReader(api_url, pods_path(ns), {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                             "resourceVersionMatch": "NotOlderThan", "resourceVersion": ""})
    try:
        client.post(pods_path(ns), json=make_pod("x").build())
        events = w.take(1)
        bookmark = events[0]
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert w.next()["type"] == "ADDED"
    finally:
        w.close()


async def _compact(etcd_url: str) -> int:
    from apiserver.storage.etcd3 import EtcdStorage

    storage = EtcdStorage([etcd_url])
    await storage.connect()
    rev = await storage.current_revision()
    await storage.compact(rev)
    await storage.close()
    return rev


def test_watch_older_than_the_cache_is_served_from_etcd_history_or_410() -> None:
    """With a ring buffer of 3 events, a watch from 6 changes ago is replayed from etcd's history; once etcd
    has compacted that history, the same watch gets an ERROR event with a 410 Expired Status."""
    import asyncio

    with api_only("--watch-cache-size", "3") as server:
        with httpx.Client(base_url=server.api_url, timeout=30) as c:
            ns = c.post("/api/v1/namespaces", json={"metadata": {"generateName": "old-"}}).json()["metadata"]["name"]
            rv = c.post(pods_path(ns), json=make_pod("old").build()).json()["metadata"]["resourceVersion"]
            for i in range(6):
                label(c, ns, "old", i=str(i))
        w = WatchReader(server.api_url, pods_path(ns), {"resourceVersion": rv})
        try:
            events = w.take(6)
            assert [e["object"]["metadata"]["labels"]["i"] for e in events] == [str(i) for i in range(6)]
        finally:
            w.close()
        asyncio.run(_compact(server.etcd_url))
        w = WatchReader(server.api_url, pods_path(ns), {"resourceVersion": rv})
        try:
            event = w.next()
            assert event["type"] == "ERROR"
            assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
            assert w.next() is None  # the stream ends after the error
        finally:
            w.close()


def test_resume_after_apiserver_restart() -> None:
    """A watcher that saw RV R reconnects to a restarted apiserver with R: the new server's cache starts after
    R, so it replays R's successors from etcd's history and misses nothing; once etcd has compacted that history,
    the same resume gets 410 Expired."""
    with api_only() as server:
        with httpx.Client(base_url=server.api_url, timeout=30) as c:
            created = c.post("/api/v1/namespaces", json={"metadata": {"generateName": "restart-"}}).json()
            ns = created["metadata"]["name"]
            rv = c.post(pods_path(ns), json=make_pod("r").build()).json()["metadata"]["resourceVersion"]
        server.restart("apiserver")
        with httpx.Client(base_url=server.api_url, timeout=30) as c:
            label(c, ns, "r", after="restart")
            c.post(pods_path(ns), json=make_pod("r2").build())
        w = WatchReader(server.api_url, pods_path(ns), {"resourceVersion": rv})
        try:
            events = [(e["type"], e["object"]["metadata"]["name"]) for e in w.take(2)]
            assert events == [("MODIFIED", "r"), ("ADDED", "r2")]
        finally:
            w.close()
        # Same after the restart for a compacted revision: 410 Expired.
        import asyncio

        asyncio.run(_compact(server.etcd_url))
        server.restart("apiserver")
        w = WatchReader(server.api_url, pods_path(ns), {"resourceVersion": rv})
        try:
            event = w.next()
            assert event["type"] == "ERROR"
            assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
        finally:
            w.close()


def test_many_watchers_all_see_the_change(api_url: str, client: httpx.Client, ns: str) -> None:
    readers = [WatchReader(api_url, pods_path(ns), {"resourceVersion": "0"}) for _ in range(20)]
    try:
        client.post(pods_path(ns), json=make_pod("fanout").build())
        for r in readers:
            event = r.next()
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "fanout")
    finally:
        for r in readers:
            r.close()


def _read_chunked_events(sock: socket.socket, count: int) -> list[dict]:
    """Read an HTTP/1.1 chunked watch body off ``sock`` until ``count`` events have come (30 s at most)."""
    sock.settimeout(30)
    buf, events = b"", []
    while len(events) < count:
        data = sock.recv(1 << 16)
        assert data, f"the stream ended after {len(events)} events"
        buf += data
        while True:
            eol = buf.find(b"\r\n")
            if eol < 0:
                break
            size = int(buf[:eol], 16)
            if len(buf) < eol + 2 + size + 2:
                break
            body, buf = buf[eol + 2:eol + 2 + size], buf[eol + 2 + size + 2:]
            events.extend(json.loads(line) for line in body.split(b"\n") if line.strip())
    return events


def test_stalled_reader_gets_every_event_in_order(api_url: str, client: httpx.Client, ns: str) -> None:
    """A client that stops reading (a tiny receive window) makes the server hold its chunks (the connection's
    flow control); once it reads again it gets every event once, in order — whether an event was written from
    the cache's dispatch while the stream was idle or queued while the connection was full."""
    url = urlsplit(api_url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((url.hostname, url.port))
    try:
        sock.sendall(f"GET {pods_path(ns)}?watch=true HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        assert head.startswith(b"HTTP/1.1 200 "), head
        filler = "x" * 40_000  # 200 events of ~41 KB: more than the server's socket buffer (4 MB at most) holds
        count = 200
        for i in range(count):
            pod = make_pod(f"p{i:03d}").build()
            pod["metadata"]["annotations"] = {"filler": filler}
            assert client.post(pods_path(ns), json=pod).status_code == 201
        events = _read_chunked_events(sock, count)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == \
            [("ADDED", f"p{i:03d}") for i in range(count)]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(set(rvs))
    finally:
        sock.close()


def test_table_watch_for_kubectl(api_url: str, client: httpx.Client, ns: str) -> None:
    w = WatchReader(api_url, pods_path(ns), {"resourceVersion": "0"},
                    headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    try:
        client.post(pods_path(ns), json=make_pod("tbl").build())
        event = w.next()
        table = event["object"]
        assert table["kind"] == "Table"
        assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
        assert table["rows"][0]["cells"][0] == "tbl"
    finally:
        w.close()


def test_lost_etcd_watch_is_reestablished_without_loss_or_repeat() -> None:
    """etcd goes away under a running apiserver and comes back: the watch cache re-watches from the last
    revision it saw, so a client watch opened before the outage sees every later change exactly once."""
    with api_only() as server, httpx.Client(base_url=server.api_url, timeout=30) as c:
        ns = c.post("/api/v1/namespaces", json={"metadata": {"name": "outage"}}).json()["metadata"]["name"]
        c.post(pods_path(ns), json=make_pod("before").build())
        w = WatchReader(server.api_url, pods_path(ns), {"resourceVersion": "0"})
        try:
            assert w.next()["object"]["metadata"]["name"] == "before"
            server.restart("etcd")
            deadline = 30
            while True:  # the apiserver answers 500/504 while etcd is away, then serves again
                resp = c.post(pods_path(ns), json=make_pod("after").build())
                if resp.status_code == 201:
                    break
                deadline -= 1
                assert deadline > 0, resp.text
                time.sleep(0.5)
            label(c, ns, "after", x="1")
            events = [(e["type"], e["object"]["metadata"]["name"]) for e in w.take(2, timeout=30)]
            assert events == [("ADDED", "after"), ("MODIFIED", "after")]
            with pytest.raises(queue.Empty):
                w.next(timeout=1)
            listed = c.get(pods_path(ns)).json()
            assert [p["metadata"]["name"] for p in listed["items"]] == ["after", "before"]
        finally:
            w.close()
