"""Keeping etcd small, as an operator sees it: the apiserver compacts etcd's history every
``--etcd-compaction-interval`` (old revisions are gone, a watch from one gets 410, current watches go on), several
apiservers compact once between them, a full etcd (NOSPACE) makes /readyz fail and writes answer etcd's error
until compaction, defragmentation and a disarm bring it back, and a fragmented member is defragmented at start.

Each test runs its own etcd — in an API-only ``kubelab.Cluster`` of its own, or bare where the test drives the
compactor without an apiserver: compaction and a full quota would disturb every other test's etcd."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import aetcd
import httpx
import pytest

from apiserver.storage.etcd3 import Compacted, EtcdStorage
from apiserver.storage.maintenance import DEFRAG_MIN_BYTES, Compactor
from conftest import api_only
from kubelab.api import Cluster
from kubelab.etcd import EtcdServer
from support.wait import wait_for
from support.watch import WatchReader

MIB = 1024 * 1024


def own_etcd(tmp_path: Path, **kwargs: int) -> EtcdServer:
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    return EtcdServer(tmp_path / "etcd", log_path=tmp_path / "etcd.log", **kwargs)  # type: ignore[arg-type]


@pytest.fixture()
def etcd_server(tmp_path: Path) -> Iterator[EtcdServer]:
    with own_etcd(tmp_path) as server:
        yield server


async def _compacted_past(url: str, revision: int) -> bool:
    storage = EtcdStorage([url])
    await storage.connect()
    try:
        await storage.list(b"/registry/configmaps/", revision=revision)
        return False
    except Compacted:
        return True
    finally:
        await storage.close()


def configmaps(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps"


def test_compaction_every_interval() -> None:
    with api_only("--etcd-compaction-interval", "1s", "--watch-cache-size", "3") as server:
        _compacts_every_interval(server)


def _compacts_every_interval(server: Cluster) -> None:
    current: WatchReader | None = None
    try:
        with httpx.Client(base_url=server.api_url, timeout=30) as c:
            created = c.post("/api/v1/namespaces", json={"metadata": {"generateName": "compact-"}})
            ns = created.json()["metadata"]["name"]
            old = c.post(configmaps(ns), json={"metadata": {"name": "old"}}).json()["metadata"]["resourceVersion"]
            latest = old
            for i in range(5):  # more changes than the watch cache keeps: a watch from `old` must ask etcd
                latest = c.patch(f"{configmaps(ns)}/old", json={"data": {"i": str(i)}},
                                 headers={"Content-Type": "application/merge-patch+json"}).json()["metadata"][
                    "resourceVersion"]
            current = WatchReader(server.api_url, configmaps(ns), {"resourceVersion": latest})

            # One interval records the revision, the next compacts to it: old revisions go.
            wait_for(lambda: asyncio.run(_compacted_past(server.etcd_url, int(old))), timeout=60,
                     what=f"etcd compacted past revision {old}")
            assert re.search(r"etcd: compacted rev \(\d+\), endpoints", server.logs("apiserver"))

            expired = WatchReader(server.api_url, configmaps(ns), {"resourceVersion": old})
            try:
                event = expired.next()
                assert event is not None and event["type"] == "ERROR"
                assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
                assert event["object"]["message"].startswith(f"too old resource version: {old} (")
            finally:
                expired.close()

            # The watch opened before the compaction goes on.
            c.post(configmaps(ns), json={"metadata": {"name": "after"}}).raise_for_status()
            event = current.next()
            assert event is not None and (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
    finally:
        if current is not None:
            current.close()


async def test_several_apiservers_compact_once_per_interval(etcd_server: EtcdServer) -> None:
    first, second = EtcdStorage([etcd_server.url]), EtcdStorage([etcd_server.url])
    await first.connect()
    await second.connect()
    try:
        a, b = Compactor(first, 300), Compactor(second, 300)
        assert await a.compact_once() is None  # wins the compare, records where etcd is: nothing to compact yet
        assert await b.compact_once() is None  # loses: learns the new compact_rev_key version
        seen = await first.current_revision()
        await first.create(b"/registry/configmaps/x/y", b"{}")
        assert await a.compact_once() == seen  # to where etcd was at a's previous round
        assert await b.compact_once() is None  # a compacted this interval: b does not compact again
        assert await b.compact_once() is not None  # a missed a turn (it died): b takes over
    finally:
        await first.close()
        await second.close()


async def _operator_recovers(port: int) -> None:
    """What etcd's maintenance guide says to do: compact to the current revision, defragment, disarm."""
    async with aetcd.Client(host="127.0.0.1", port=port) as client:
        revision = (await client.get_prefix(b"/registry/", keys_only=True)).header.revision
        await client.compact(revision, physical=True)
        await client.defragment()
        async for alarm in client.list_alarms():  # as etcdctl alarm disarm: each member's
            await client.disarm_alarm(alarm.member_id)


def test_nospace_alarm_fails_readyz_and_writes_until_recovered() -> None:
    with api_only(etcd_quota_backend_bytes=2 * MIB) as server, \
            httpx.Client(base_url=server.api_url, timeout=30) as c:
        ns = c.post("/api/v1/namespaces", json={"metadata": {"name": "full"}}).json()["metadata"]["name"]
        refused = None
        for i in range(40):
            resp = c.post(configmaps(ns), json={"metadata": {"name": f"big-{i}"},
                                                 "data": {"blob": "x" * (256 * 1024)}})
            if resp.status_code != 201:
                refused = resp
                break
        assert refused is not None, "etcd never filled its 2 MiB quota"
        # kube-apiserver passes etcd's error on as a Status without a reason.
        assert refused.status_code == 500, refused.text
        assert refused.json()["message"] == "etcdserver: mvcc: database space exceeded"
        assert "reason" not in refused.json()

        ready = c.get("/readyz", params={"verbose": "1"})
        assert ready.status_code == 500
        lines = ready.text.splitlines()
        assert lines[0] == "[+]ping ok" and lines[-1] == "readyz check failed"
        assert re.fullmatch(r"\[-\]etcd failed: etcd alarm NOSPACE \(memberID:\d+\)", lines[1]), lines
        assert c.get("/readyz").status_code == 500
        assert c.get(f"{configmaps(ns)}/big-0").status_code == 200  # reads are served meanwhile
        assert c.post(configmaps(ns), json={"metadata": {"name": "tiny"}}).status_code == 500

        # Deletes are allowed under the alarm; then compaction, defragmentation and a disarm.
        for i in range(40):
            assert c.delete(f"{configmaps(ns)}/big-{i}").status_code in (200, 404)
        asyncio.run(_operator_recovers(urlsplit(server.etcd_url).port or 0))
        assert c.get("/readyz").text == "ok"
        assert c.post(configmaps(ns), json={"metadata": {"name": "tiny"}}).status_code == 201


async def _fragment(port: int, megabytes: int) -> int:
    """Write then delete ``megabytes`` of values and compact: the backend file keeps the space as free pages."""
    async with aetcd.Client(host="127.0.0.1", port=port) as client:
        for i in range(megabytes):
            await client.put(f"/kubelab-test/blob/{i}".encode(), os.urandom(MIB))
        await client.delete_prefix(b"/kubelab-test/blob/")
        put = await client.put(b"/kubelab-test/mark", b"")
        await client.compact(put.header.revision, physical=True)
    # etcd counts the freed pages once a later write has committed (a backend commit every 100 ms).
    storage = EtcdStorage([f"http://127.0.0.1:{port}"])
    await storage.connect()
    try:
        for _ in range(100):
            await storage.create(f"/kubelab-test/tick/{os.urandom(4).hex()}".encode(), b"")
            status = await storage.status()
            if status.db_size_in_use * 2 < status.db_size:
                return status.db_size
            await asyncio.sleep(0.1)
        raise AssertionError(f"etcd did not free the deleted values: {status}")
    finally:
        await storage.close()


async def _db_size(port: int) -> int:
    async with aetcd.Client(host="127.0.0.1", port=port) as client:
        return int((await client.status()).db_size)


def test_a_fragmented_member_is_defragmented_at_start() -> None:
    with api_only() as server:
        server.stop_component("apiserver")  # the member is fragmented before the apiserver starts
        url, port = server.etcd_url, urlsplit(server.etcd_url).port or 0
        before = asyncio.run(_fragment(port, DEFRAG_MIN_BYTES // MIB + 8))
        assert before > DEFRAG_MIN_BYTES
        server.restart("apiserver")
        log = server.logs("apiserver")
        assert f"etcd member {url} is fragmented" in log
        assert re.search(rf"defragmented etcd member {re.escape(url)}: dbSize {before} -> \d+ bytes", log)
        assert asyncio.run(_db_size(port)) < before // 4

        # Not fragmented: the next start leaves it alone.
        server.restart("apiserver")
        assert server.logs("apiserver").count("is fragmented") == 1
