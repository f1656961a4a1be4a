"""A 3-member TLS etcd under an apiserver with a steady write load and an open watch: the leader is killed
(``kill -9``), brought back, then a follower is: nothing acknowledged is lost, the watch sees every acknowledged
object exactly once, and the apiserver serves again after each kill.

The apiserver is given all three members in ``--etcd-servers``; its gRPC channel balances over them, leaves a
dead member out, and its watch cache resumes its etcd watches from their revision on another member. Four
writers create ConfigMaps for about ten seconds and a prober one more every 0.2 s; a watcher, opened before the
first write, re-watches from its last resourceVersion if its stream ends (as an informer would). The figures —
writes acknowledged and failed (by reason), seconds from each kill to the next acknowledged write — are printed
for the record (``pytest -s``). Writes in flight when the leader dies fail after etcd's request timeout (5 s +
2 election timeouts: "request timed out, possibly due to previous leader failure"), as under kube-apiserver;
writes begun after the new leader's election go through. Every wait is bounded; nothing asserts how long
anything took.

The cluster is an API-only ``kubelab.Cluster`` with a 3-member TLS etcd (``etcd_tls=True, etcd_members=3``); a
member is killed and brought back by its name (``Cluster.kill``, ``Cluster.start_component``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from conftest import api_only
from kubelab.api import Cluster

LOAD_SECONDS = 10.0
WRITERS = 4
PROBE_INTERVAL = 0.2
RECOVERY_BOUND = 60.0  # the apiserver must serve again within this after a kill (a wait bound, not a figure)
NS = "chaos-etcd"


@dataclass
class Load:
    """ConfigMap creates from a few threads; each write's start, end and outcome."""

    url: str
    writes: list[tuple[float, float, str, bool]] = field(default_factory=list)  # (start, end, name, acknowledged)
    failures: Counter[str] = field(default_factory=Counter)  # by status code and reason, for the figures
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, worker: int) -> None:
        """One writer: create after create, as fast as they are answered."""
        with httpx.Client(base_url=self.url, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                if not self._write(client, f"w{worker}-{n}"):
                    time.sleep(0.05)

    def probe(self) -> None:
        """A create every PROBE_INTERVAL whatever the others wait for (a write in flight when the leader dies
        waits out etcd's request timeout, 7 s here), so the figures show when writes go through again."""
        with httpx.Client(base_url=self.url, timeout=30) as client, ThreadPoolExecutor(64) as pool:
            n = 0
            while not self.stop.wait(PROBE_INTERVAL):
                n += 1
                pool.submit(self._write, client, f"probe-{n}")

    def _write(self, client: httpx.Client, name: str) -> bool:
        began = time.monotonic()
        try:
            resp = client.post(f"/api/v1/namespaces/{NS}/configmaps", json={"metadata": {"name": name}})
            ok = resp.status_code == 201
            why = f"{resp.status_code} {resp.json().get('message', '')[:80]}"
        except (httpx.HTTPError, ValueError) as err:
            ok, why = False, type(err).__name__
        with self.lock:
            self.writes.append((began, time.monotonic(), name, ok))
            if not ok:
                self.failures[f"{why} after {time.monotonic() - began:.0f}s"] += 1
        return ok

    def acknowledged(self) -> set[str]:
        return {name for _, _, name, ok in self.writes if ok}

    def recovery_after(self, moment: float) -> float | None:
        """Seconds from ``moment`` to the end of the first acknowledged write begun after it."""
        ends = [end for began, end, _, ok in self.writes if ok and began >= moment]
        return min(ends) - moment if ends else None


class Watcher:
    """Every ADDED name seen on a ConfigMap watch; re-watches from the last resourceVersion when a stream ends."""

    def __init__(self, url: str, rv: str) -> None:
        self.url = url
        self.rv = rv
        self.added: list[str] = []
        self.restarts = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=httpx.Timeout(30, read=None)) as client:
            while not self.stop.is_set():
                try:
                    with client.stream("GET", f"/api/v1/namespaces/{NS}/configmaps",
                                       params={"watch": "true", "resourceVersion": self.rv,
                                               "allowWatchBookmarks": "true", "timeoutSeconds": "5"}) as resp:
                        for line in resp.iter_lines():
                            if not line.strip():
                                continue
                            event = json.loads(line)
                            if event["type"] == "ERROR":
                                raise AssertionError(f"watch error: {event}")
                            self.rv = event["object"]["metadata"]["resourceVersion"]
                            if event["type"] == "ADDED":
                                self.added.append(event["object"]["metadata"]["name"])
                except httpx.HTTPError:
                    time.sleep(0.2)
                self.restarts += 1


def _kill_and_restart(cluster: Cluster, member_name: str, load: Load, downtime: float) -> float:
    moment = time.monotonic()
    cluster.kill(member_name)
    time.sleep(downtime)
    cluster.start_component(member_name)
    return moment


def test_leader_and_follower_killed_under_load(tmp_path: Path) -> None:
    control = api_only(etcd_tls=True, etcd_members=3).start()
    cluster = control.running.etcd
    url = control.api_url
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            rv = c.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).json()["metadata"]["resourceVersion"]
        watcher = Watcher(url, rv)
        load = Load(url)
        writers = [threading.Thread(target=load.run, args=(i,), daemon=True) for i in range(WRITERS)]
        writers.append(threading.Thread(target=load.probe, daemon=True))
        began = time.monotonic()
        for w in writers:
            w.start()

        time.sleep(2.0)
        leader = cluster.leader()
        assert leader is not None
        leader_killed = _kill_and_restart(control, leader.name, load, downtime=2.0)
        time.sleep(1.5)
        new_leader = cluster.leader()
        follower = next(m for m in cluster if m is not new_leader and m.name != leader.name)
        follower_killed = _kill_and_restart(control, follower.name, load, downtime=2.0)
        time.sleep(max(0.0, LOAD_SECONDS - (time.monotonic() - began)))
        load.stop.set()
        for w in writers:
            w.join(60)
            assert not w.is_alive(), "a writer is stuck"

        acknowledged = load.acknowledged()
        failed = sum(1 for *_, ok in load.writes if not ok)
        deadline = time.monotonic() + RECOVERY_BOUND
        while not acknowledged <= set(watcher.added) and time.monotonic() < deadline:
            time.sleep(0.2)
        watcher.stop.set()
        with httpx.Client(base_url=url, timeout=30) as c:
            stored = {item["metadata"]["name"]
                      for item in c.get(f"/api/v1/namespaces/{NS}/configmaps").json()["items"]}
            # the cluster still takes writes
            assert c.post(f"/api/v1/namespaces/{NS}/configmaps", json={"metadata": {"name": "after"}}
                          ).status_code == 201

        recoveries = [load.recovery_after(leader_killed), load.recovery_after(follower_killed)]
        print(f"\n[etcd members chaos] leader {leader.name} then follower {follower.name} killed: "
              f"{len(load.writes)} writes in {LOAD_SECONDS:.0f}s, {len(acknowledged)} acknowledged, {failed} failed; "
              f"seconds to the next acknowledged write: leader {recoveries[0]}, follower {recoveries[1]}; "
              f"watch re-opened {watcher.restarts} time(s); failures: {dict(load.failures)}")
        assert acknowledged <= stored, f"acknowledged writes lost: {sorted(acknowledged - stored)}"
        assert all(r is not None for r in recoveries), "the apiserver did not take a write again after a kill"
        duplicates = [name for name, count in Counter(watcher.added).items() if count > 1]
        assert not duplicates, f"the watch saw these twice: {duplicates}"
        assert acknowledged <= set(watcher.added), f"the watch missed {sorted(acknowledged - set(watcher.added))}"
        assert set(watcher.added) - {"after"} <= stored  # nothing seen that etcd does not hold
    finally:
        control.stop()
