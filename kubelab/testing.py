"""Operator-testing helpers over the REST API: apply manifests, wait for a condition, run an operator process.

Why over plain HTTP (httpx) rather than kubectl or the ``kubernetes`` package: they are the runtime dependencies
already, and a test suite then needs neither the kubectl binary nor the client to set a cluster up. The verbs are
kube's own: ``apply_manifests`` is ``kubectl apply --server-side --force-conflicts`` (a PATCH of type
``application/apply-patch+yaml`` per object, found through discovery, retried while a CRD just applied is not yet
served), ``wait_for`` is ``kubectl wait --for=condition=X | delete | jsonpath=...`` (polling, always bounded).
Failures raise ``ApplyError`` / ``TimeoutError`` with the apiserver's ``Status`` message or the last state seen.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import yaml

from kubelab.process import loopback_client

__all__ = ["ApplyError", "Condition", "Operator", "apply_manifests", "object_url", "wait_for", "wait_for_nodes_ready"]

FIELD_MANAGER = "kubelab-testing"
FIRST_KINDS = ("Namespace", "CustomResourceDefinition")  # applied before the objects that need them
Condition = str | Callable[[dict[str, Any]], bool]


class ApplyError(RuntimeError):
    """An object was refused (the apiserver's Status message) or its kind is not served."""


def _load(path: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
    docs: list[dict[str, Any]] = []
    for file in files:
        for doc in yaml.safe_load_all(file.read_text()):
            if not doc:
                continue
            if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
                raise ApplyError(f"{file}: not a Kubernetes object (apiVersion and kind are required)")
            docs.extend(doc.get("items", []) if doc["kind"].endswith("List") else [doc])
    return sorted(docs, key=lambda d: d["kind"] not in FIRST_KINDS)


def _resource(client: httpx.Client, api_version: str, kind: str) -> tuple[str, bool] | None:
    """(plural, namespaced) of a kind from discovery; None while it is not served."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    resp = client.get(prefix)
    if resp.status_code != 200:
        return None
    for resource in resp.json().get("resources", []):
        if resource.get("kind") == kind and "/" not in resource["name"]:
            return resource["name"], bool(resource.get("namespaced"))
    return None


def object_url(client: httpx.Client, obj: dict[str, Any], namespace: str | None = None,
               timeout: float = 30.0) -> str:
    """The REST path of an object, waiting (bounded) for its kind to be served (a CRD being established)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    deadline = time.monotonic() + timeout
    found = _resource(client, api_version, kind)
    while found is None:
        if time.monotonic() > deadline:
            raise ApplyError(f'no matches for kind "{kind}" in version "{api_version}"')
        time.sleep(0.1)
        found = _resource(client, api_version, kind)
    plural, namespaced = found
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    name = obj["metadata"]["name"]
    if namespaced:
        ns = obj["metadata"].get("namespace") or namespace or "default"
        return f"{prefix}/namespaces/{ns}/{plural}/{name}"
    return f"{prefix}/{plural}/{name}"


def apply_manifests(api_url: str, path: Path, namespace: str | None = None,
                    timeout: float = 30.0) -> list[dict[str, Any]]:
    """Server-side apply every object of a YAML file or directory (Namespaces and CRDs first); objects as stored."""
    applied = []
    with loopback_client(timeout, api_url) as client:
        for doc in _load(path):
            url = object_url(client, doc, namespace, timeout)
            resp = client.patch(url, content=json.dumps(doc),
                                params={"fieldManager": FIELD_MANAGER, "force": "true"},
                                headers={"Content-Type": "application/apply-patch+yaml"})
            if resp.status_code >= 400:
                try:
                    message = resp.json().get("message", resp.text)
                except ValueError:
                    message = resp.text
                raise ApplyError(f"{doc['kind']} {doc['metadata'].get('name')}: {message}")
            applied.append(resp.json())
    return applied


def _as_dict(obj: Any) -> dict[str, Any]:
    """A dict as the API returns it, from a dict or a ``kubernetes`` client model."""
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"wait_for needs an object dict or a kubernetes client model, not {type(obj).__name__}")
    raw = to_dict()
    return {"apiVersion": raw["api_version"], "kind": raw["kind"],
            "metadata": {"name": raw["metadata"]["name"], "namespace": raw["metadata"].get("namespace")}}


def _jsonpath(obj: Any, path: str) -> Any:
    for part in path.strip("{}").strip(".").split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _check(condition: Condition) -> Callable[[dict[str, Any] | None], bool]:
    """``kubectl wait --for``'s forms: ``delete``, ``condition=Ready`` (or just ``Ready``; ``=False`` too),
    ``jsonpath={.status.phase}=Running``; or any predicate over the object."""
    if callable(condition):
        return lambda obj: obj is not None and condition(obj)
    if condition == "delete":
        return lambda obj: obj is None
    if condition.startswith("jsonpath="):
        path, _, value = condition.removeprefix("jsonpath=").partition("=")
        return lambda obj: obj is not None and str(_jsonpath(obj, path)) == value
    kind, _, status = condition.removeprefix("condition=").partition("=")
    wanted = status or "True"
    return lambda obj: obj is not None and any(
        c.get("type", "").lower() == kind.lower() and c.get("status") == wanted
        for c in ((obj.get("status") or {}).get("conditions") or []))


def wait_for(api_url: str, obj: Any, condition: Condition, timeout: float = 30.0) -> dict[str, Any] | None:
    """Poll the object until ``condition`` holds; the object then (None once deleted). TimeoutError otherwise."""
    check = _check(condition)
    target = _as_dict(obj)
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    with loopback_client(10.0, api_url) as client:
        url = object_url(client, target, timeout=timeout)
        while True:
            resp = client.get(url)
            last = resp.json() if resp.status_code == 200 else None
            if resp.status_code not in (200, 404):
                resp.raise_for_status()
            if check(last):
                return last
            if time.monotonic() > deadline:
                shown = json.dumps((last or {}).get("status"), default=str)[:2000] if last else "not found"
                raise TimeoutError(f"{target['kind']} {target['metadata']['name']}: {condition!r} not met within "
                                   f"{timeout:.0f}s; status: {shown}")
            time.sleep(0.1)


def wait_for_nodes_ready(api_url: str, count: int, timeout: float = 60.0) -> list[str]:
    """Until ``count`` Nodes have condition Ready=True; their names."""
    deadline = time.monotonic() + timeout
    ready: list[str] = []
    with loopback_client(10.0, api_url) as client:
        while True:
            items = client.get("/api/v1/nodes").raise_for_status().json()["items"]
            ready = [n["metadata"]["name"] for n in items if _check("Ready")(n)]
            if len(ready) >= count:
                return ready
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(ready)} of {count} nodes Ready after {timeout:.0f}s: {ready}")
            time.sleep(0.05)


class Operator:
    """An operator's process (its own process group, output in ``log``) for a ``with`` block."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None) -> None:
        self.argv, self.log, self.env, self.cwd = argv, log, env, cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Operator:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd,
                                         start_new_session=True, stdin=subprocess.DEVNULL)
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to its group (kopf then releases what it holds), SIGKILL after ``timeout``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
