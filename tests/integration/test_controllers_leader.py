"""Leader election between two real controller-managers: one holds the Lease and acts; when it dies without
releasing it (SIGKILL), the other takes over once the lease expires and carries on; a clean SIGTERM releases the
lease so a successor takes over at once.  Each test uses its own Lease name, so no other manager interferes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

from kubelab.etcd import free_port
from support.controllers import ControllerManager, pods
from support.wait import wait_for

FAST = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=0.5s",
        "--controllers=replicationcontroller")


def lease(client: httpx.Client, name: str) -> dict[str, Any]:
    resp = client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    return dict(resp.json().get("spec", {})) if resp.status_code == 200 else {}


def rc(client: httpx.Client, ns: str, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"app": name},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=body).status_code == 201


def test_failover(client: httpx.Client, api_url: str, ns: str, tmp_path: Path) -> None:
    name = f"kcm-{uuid.uuid4().hex[:8]}"
    managers = [ControllerManager(api_url, tmp_path / f"cm{i}.log", f"--leader-elect-resource-name={name}", *FAST)
                for i in range(2)]
    try:
        holder = wait_for(lambda: lease(client, name).get("holderIdentity"), what="a leader")
        rc(client, ns, "before")
        wait_for(lambda: len(pods(client, ns, "app=before")) == 2, what="the leader's pods")
        # Exactly one acts: the other never started its controllers.
        logs = [m.log() for m in managers]
        assert sum("started controllers" in text for text in logs) == 1
        leader = next(m for m, text in zip(managers, logs, strict=False) if "started controllers" in text)
        follower = next(m for m in managers if m is not leader)
        assert leader.kill() != 0  # dies without releasing the lease
        new_holder = wait_for(lambda: (h := lease(client, name).get("holderIdentity")) and h != holder and h,
                              timeout=30, what="the follower taking over")
        assert new_holder
        rc(client, ns, "after")
        wait_for(lambda: len(pods(client, ns, "app=after")) == 2, what="the new leader's pods")
        assert "started controllers" in follower.log()
        assert lease(client, name)["leaseTransitions"] >= 1
        assert len(pods(client, ns, "app=before")) == 2  # no double creation across the handover
    finally:
        for m in managers:
            m.stop()


def test_healthz_and_clean_shutdown_releasing_the_lease(client: httpx.Client, api_url: str, tmp_path: Path) -> None:
    name, port = f"kcm-{uuid.uuid4().hex[:8]}", free_port()
    manager = ControllerManager(api_url, tmp_path / "cm.log", f"--leader-elect-resource-name={name}", *FAST,
                                f"--healthz-port={port}")
    try:
        wait_for(lambda: lease(client, name).get("holderIdentity"), what="a leader")
        assert f"healthz: http://127.0.0.1:{port}/healthz" in manager.log()  # where the launcher looks for it
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").text == "ok"
        assert manager.stop() == 0
        assert not lease(client, name).get("holderIdentity")
    finally:
        manager.stop()
