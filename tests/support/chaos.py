"""What the component-kill test (tests/chaos/test_component_kills.py) runs beside the cluster: a ConfigMap writer
that knows every version it committed, an RC scaler, a watcher that records every event it is sent and resumes
as an informer's reflector does, and a scan of /proc for what a run left behind.

The writer's bookkeeping is what makes the checks exact. Each write carries a counter and, once the object
exists, the resourceVersion it read last as a precondition (optimistic concurrency, as controllers write). A
write whose answer is lost (the apiserver or etcd died under it) may or may not have committed, so the writer
reads the object back before writing it again: what it reads is committed, whatever the lost answer would have
said, and a write it did not see commit cannot commit later unseen, because the next write's precondition
would then fail and send the writer back to read. So ``committed`` is every version the ConfigMaps ever had —
exactly what a watcher from the start must be sent, each once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

MERGE = {"Content-Type": "application/merge-patch+json"}
RETRY_SECONDS = 0.2
SETTLE_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Version:
    """One committed version of a writer's ConfigMap: its name, data counter and resourceVersion."""

    name: str
    counter: int
    rv: str


class Looper(threading.Thread):
    """A daemon thread that runs ``step`` every ``period`` seconds with its own client, until ``stop``."""

    def __init__(self, api_url: str, period: float) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=api_url, timeout=5)
        self.period = period
        self.stopping = threading.Event()
        self.paused = threading.Event()  # set: skip steps until cleared

    def run(self) -> None:
        while not self.stopping.is_set():
            if not self.paused.is_set():
                self.step()
            self.stopping.wait(self.period)

    def step(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop stepping, ``finish``, close the client."""
        self.stopping.set()
        self.join(30)
        try:
            self.finish()
        finally:
            self.client.close()

    def finish(self) -> None:
        """What is left to do once the loop stopped."""


class ConfigMapWriter(Looper):
    """Creates ConfigMaps ``names`` in ``namespace`` and updates them round-robin, one write per ``period``."""

    def __init__(self, api_url: str, namespace: str, names: list[str], labels: dict[str, str],
                 period: float) -> None:
        super().__init__(api_url, period)
        self.path = f"/api/v1/namespaces/{namespace}/configmaps"
        self.names, self.labels = names, labels
        self.committed: list[Version] = []
        self.refused = 0  # writes answered with an error (5xx while etcd was down, 409 after a lost answer)
        self._attempt = {name: 0 for name in names}
        self._known: dict[str, Version | None] = {name: None for name in names}  # the version to write over
        self._unsure: set[str] = set()  # a write whose answer was lost: read back before writing again
        self._turn = 0

    def step(self) -> None:
        name = self.names[self._turn % len(self.names)]
        self._turn += 1
        if name in self._unsure and not self._read_back(name):
            return
        self._attempt[name] += 1
        counter = self._attempt[name]
        known = self._known[name]
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "labels": self.labels},
                                "data": {"counter": str(counter)}}
        try:
            if known is None:
                resp = self.client.post(self.path, json=body)
            else:
                body["metadata"]["resourceVersion"] = known.rv
                resp = self.client.put(f"{self.path}/{name}", json=body)
        except httpx.TransportError:
            self._unsure.add(name)
            return
        if resp.status_code in (200, 201):
            self._commit(resp.json())
        else:
            self.refused += 1
            self._unsure.add(name)

    def _read_back(self, name: str) -> bool:
        try:
            resp = self.client.get(f"{self.path}/{name}")
        except httpx.TransportError:
            return False
        if resp.status_code == 404:
            self._unsure.discard(name)
            return True
        if resp.status_code != 200:
            return False
        self._commit(resp.json())
        return True

    def _commit(self, obj: dict[str, Any]) -> None:
        version = version_of(obj)
        if version not in self.committed:  # a read-back of a version an answer already reported
            self.committed.append(version)
        self._known[version.name] = version
        self._attempt[version.name] = max(self._attempt[version.name], version.counter)
        self._unsure.discard(version.name)

    def finish(self) -> None:
        """Read back every ConfigMap whose last write is in doubt (for up to ``SETTLE_SECONDS``)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while self._unsure and time.monotonic() < deadline:
            for name in list(self._unsure):
                self._read_back(name)
            time.sleep(RETRY_SECONDS)
        assert not self._unsure, f"could not read back {sorted(self._unsure)}"

    def last(self) -> dict[str, Version]:
        """Each ConfigMap's latest committed version."""
        return {name: v for name, v in self._known.items() if v is not None}


def version_of(obj: dict[str, Any]) -> Version:
    meta = obj["metadata"]
    return Version(meta["name"], int(obj["data"]["counter"]), meta["resourceVersion"])


class ReplicaScaler(Looper):
    """Sets each RC's ``spec.replicas`` to the next of ``sequence`` every ``period`` seconds (errors: next time)."""

    def __init__(self, api_url: str, namespace: str, names: list[str], sequence: list[int], period: float) -> None:
        super().__init__(api_url, period)
        self.path = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
        self.names, self.sequence = names, sequence
        self.scaled = 0
        self._turn = 0

    def step(self) -> None:
        replicas = self.sequence[self._turn % len(self.sequence)]
        self._turn += 1
        for name in self.names:
            try:
                resp = self.client.patch(f"{self.path}/{name}", json={"spec": {"replicas": replicas}}, headers=MERGE)
            except httpx.TransportError:
                continue
            self.scaled += resp.status_code == 200


@dataclass(slots=True)
class WatchLog:
    """What a watcher was sent: every ADDED/MODIFIED/DELETED object version, in order, and how it got there."""

    versions: list[Version] = field(default_factory=list)
    rewatches: int = 0  # watches started again from the last resourceVersion (a stream ended or broke)
    breaks: int = 0  # of which the connection broke or could not be made (the apiserver was down)
    relists: int = 0


class Watcher(threading.Thread):
    """Watches ``path`` (a collection) from a LIST's resourceVersion and records every event, as an informer's
    reflector does: when the stream ends or breaks it watches again from the last resourceVersion it was sent
    (bookmarks included); on 410 Gone it relists, and the relisted items are not events (``relists`` counts it)."""

    def __init__(self, api_url: str, path: str, selector: str) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=api_url, timeout=httpx.Timeout(5, read=30))
        self.path, self.selector = path, selector
        self.log = WatchLog()
        self.rv = ""
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if not self.rv:
                    self._list()
                self._watch()
            except (httpx.TransportError, httpx.StreamError, ValueError):
                self.log.breaks += 1
            self.log.rewatches += 1
            self.stopping.wait(RETRY_SECONDS)

    def _list(self) -> None:
        resp = self.client.get(self.path, params={"labelSelector": self.selector})
        if resp.status_code == 200:
            self.rv = resp.json()["metadata"]["resourceVersion"]

    def _watch(self) -> None:
        params = {"watch": "true", "labelSelector": self.selector, "resourceVersion": self.rv,
                  "allowWatchBookmarks": "true", "timeoutSeconds": "10"}
        with self.client.stream("GET", self.path, params=params) as resp:
            if resp.status_code == 410:
                self._relist()
                return
            if resp.status_code != 200:
                return
            for line in resp.iter_lines():
                if self.stopping.is_set():
                    return
                if line.strip():
                    self._event(json.loads(line))

    def _event(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        if event["type"] == "ERROR":
            if obj.get("code") == 410:
                self._relist()
            return
        if event["type"] != "BOOKMARK":
            self.log.versions.append(version_of(obj))
        self.rv = obj["metadata"]["resourceVersion"]

    def _relist(self) -> None:
        self.log.relists += 1
        self.rv = ""

    def stop(self) -> None:
        self.stopping.set()
        self.join(40)
        self.client.close()


def processes_with(marker: str) -> list[int]:
    """Pids of processes whose environment holds ``marker`` (``NAME=value``), read from /proc."""
    found = []
    needle = marker.encode()
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle in environ:
            found.append(pid)
    return found


def container_pids(marker: str) -> dict[str, list[int]]:
    """Pod name (the container's ``POD_NAME``) → pids of the container processes whose environment holds
    ``marker``."""
    out: dict[str, list[int]] = {}
    for pid in processes_with(marker):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        except OSError:
            continue
        out.setdefault(environ.get(b"POD_NAME", b"").decode(), []).append(pid)
    return out


def processes_in(directory: Path) -> list[int]:
    """Pids of processes whose working directory is ``directory`` or below it (a kubelet started there, its shim
    zygote, each shim in its container's state directory, each container in its own)."""
    found = []
    for pid in _pids():
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if cwd == directory or directory in cwd.parents:
            found.append(pid)
    return found


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            yield int(entry)
