"""`kubelab snapshot save/restore` as an operator backs up and restores a kubeadm cluster: objects written, a
snapshot saved over TLS, the cluster stopped and its etcd data lost, the snapshot restored, the cluster started
again — the objects are back and the cluster takes new writes. With 1 member (after `kubelab down --wipe`, so
the restore starts from nothing) and with 3 (the data dir deleted, the recorded members restored)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kubelab.etcd import free_port

ROOT = Path(__file__).resolve().parents[2]


def kubelab(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "kubelab", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, stdin=subprocess.DEVNULL, env={**os.environ, "KUBELAB_ETCD": ""})
    return done


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


RC = {"metadata": {"name": "web"}, "spec": {"replicas": 0, "selector": {"app": "web"}, "template": {
    "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.mark.parametrize("members", [1, 3])
def test_objects_come_back_from_a_snapshot(tmp_path: Path, members: int) -> None:
    data = tmp_path / "data"
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    up = ["up", "--detach", "--nodes", "0", "--port", str(port), "--data-dir", str(data),
          "--etcd-members", str(members)]
    _ok(kubelab(*up))
    try:
        with httpx.Client(base_url=api, timeout=30) as c:
            assert c.post("/api/v1/namespaces", json={"metadata": {"name": "kept"}}).status_code == 201
            assert c.post("/api/v1/namespaces/kept/configmaps",
                          json={"metadata": {"name": "conf"}, "data": {"k": "v"}}).status_code == 201
            assert c.post("/api/v1/namespaces/kept/replicationcontrollers", json=RC).status_code == 201

        snapshot = tmp_path / "backup.db"
        saved = _ok(kubelab("snapshot", "save", str(snapshot), "--data-dir", str(data)))
        assert stat.S_IMODE(snapshot.stat().st_mode) == 0o600  # it holds every Secret
        figures = dict(line.strip().split(":", 1) for line in saved.splitlines()[1:])
        assert int(figures["size"].split()[0]) == snapshot.stat().st_size
        assert int(figures["revision"]) > 0 and int(figures["total keys"]) > 3
        with httpx.Client(base_url=api, timeout=30) as c:  # written after the snapshot: gone after the restore
            assert c.post("/api/v1/namespaces", json={"metadata": {"name": "later"}}).status_code == 201

        refused = kubelab("snapshot", "restore", str(snapshot), "--data-dir", str(data))
        assert refused.returncode == 1 and "stop it first" in refused.stderr
        if members == 1:
            _ok(kubelab("down", "--data-dir", str(data), "--wipe"))
            assert not (data / "etcd").exists()
        else:
            _ok(kubelab("down", "--data-dir", str(data)))
            shutil.rmtree(data / "etcd")
        restored = _ok(kubelab("snapshot", "restore", str(snapshot), "--data-dir", str(data),
                               "--etcd-members", str(members)))
        assert restored.count("restored ") == members
        _ok(kubelab(*up[:-2]))  # without --etcd-members: as many members as were restored

        with httpx.Client(base_url=api, timeout=30) as c:
            assert c.get("/api/v1/namespaces/kept").status_code == 200
            assert c.get("/api/v1/namespaces/kept/configmaps/conf").json()["data"] == {"k": "v"}
            assert c.get("/api/v1/namespaces/kept/replicationcontrollers/web").json()["spec"]["selector"] == {
                "app": "web"}
            assert c.get("/api/v1/namespaces/later").status_code == 404
            assert c.post("/api/v1/namespaces/kept/configmaps",  # the cluster works: a new write succeeds
                          json={"metadata": {"name": "new"}}).status_code == 201
        status = _ok(kubelab("status", "--data-dir", str(data)))
        etcd_rows = [line.split() for line in status.splitlines() if line.startswith("etcd")]
        assert len(etcd_rows) == members and all(row[3] == "ok" for row in etcd_rows)
    finally:
        kubelab("down", "--data-dir", str(data))
