"""Deployments with a real controller-manager and the real kubectl: a rolling update that never drops below
``replicas - maxUnavailable`` ready pods and never exceeds ``replicas + maxSurge`` pods, ``kubectl rollout
status`` waiting for it, ``kubectl rollout undo``, ``revisionHistoryLimit``, and the Recreate strategy.  The
test plays the kubelet: it marks the controller's pods Running and Ready."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import httpx

from conftest import Kubectl
from support.controllers import controller_manager_fixture, pods, set_ready
from support.wait import wait_for

manager = controller_manager_fixture("replicaset,deployment,garbagecollector")


def deployment(name: str, image: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def image_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def replica_sets(client: httpx.Client, ns: str) -> list[dict[str, Any]]:
    return list(client.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"])


def rollout_status(kubectl: Kubectl, name: str, ns: str) -> subprocess.Popen[str]:
    """``kubectl rollout status`` in the background: it returns only once the rollout is complete."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(kubectl.home), "KUBECONFIG": str(kubectl.home / "none")}
    return subprocess.Popen([kubectl.binary, "-s", kubectl.server, "rollout", "status", f"deployment/{name}",
                             "-n", ns, "--timeout=60s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)


def finished(status: subprocess.Popen[str]) -> str:
    out, _ = status.communicate(timeout=30)
    assert status.returncode == 0, out
    return out


def play_kubelet(client: httpx.Client, ns: str, selector: str, until: subprocess.Popen[str],
                 check: Any = None, timeout: float = 60) -> None:
    """Mark new pods Ready (one per pass, as they would start) until ``until`` exits; run ``check`` each pass."""
    deadline = time.monotonic() + timeout
    try:
        while until.poll() is None:
            assert time.monotonic() < deadline, "rollout did not finish"
            current = pods(client, ns, selector, live=False)
            if check is not None:
                check(current)
            pending = [p for p in current if not p["metadata"].get("deletionTimestamp")
                       and p.get("status", {}).get("phase") != "Running"]
            if pending:
                set_ready(client, pending[0])
            time.sleep(0.1)
    except BaseException:
        until.kill()  # a failed check must not leave kubectl running into the next tests
        until.communicate()
        raise


def test_rolling_update_status_and_undo(client: httpx.Client, ns: str, kubectl: Kubectl, manager: None) -> None:
    spec = deployment("web", "nginx:1", 4, revisionHistoryLimit=1,
                      strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}})
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=spec).status_code == 201
    status = rollout_status(kubectl, "web", ns)
    play_kubelet(client, ns, "app=web", status)
    assert 'deployment "web" successfully rolled out' in finished(status)

    def never_below_minimum(current: list[dict[str, Any]]) -> None:
        live = [p for p in current if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in live if any(c["type"] == "Ready" and c["status"] == "True"
                                        for c in p.get("status", {}).get("conditions") or [])]
        assert len(ready) >= 3, f"only {len(ready)} ready pods during the rollout"
        assert len(live) <= 5, f"{len(live)} pods: more than replicas + maxSurge"

    for image in ("nginx:2", "nginx:3"):
        kubectl("set", "image", "deployment/web", f"c={image}", "-n", ns)
        status = rollout_status(kubectl, "web", ns)
        play_kubelet(client, ns, "app=web", status, never_below_minimum)
        finished(status)
        assert {image_of(p) for p in pods(client, ns, "app=web")} == {image}
    # revisionHistoryLimit=1: the newest ReplicaSet plus one old one.
    wait_for(lambda: len(replica_sets(client, ns)) == 2, what="old ReplicaSets cleaned up")
    revisions = sorted(int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
                       for rs in replica_sets(client, ns))
    assert revisions == [2, 3]
    assert all(rs["metadata"]["labels"].get("pod-template-hash") and rs["metadata"]["name"].startswith("web-")
               for rs in replica_sets(client, ns))
    out = kubectl("rollout", "undo", "deployment/web", "-n", ns).stdout
    assert "rolled back" in out
    status = rollout_status(kubectl, "web", ns)
    play_kubelet(client, ns, "app=web", status, never_below_minimum)
    finished(status)
    assert {image_of(p) for p in pods(client, ns, "app=web")} == {"nginx:2"}
    d = client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web").json()
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    conditions = {c["type"]: c for c in d["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    scaled = [e["message"] for e in client.get(f"/api/v1/namespaces/{ns}/events",
                                               params={"fieldSelector": "reason=ScalingReplicaSet"}).json()["items"]]
    assert any(m.startswith("Scaled up replica set web-") for m in scaled)
    assert any(m.startswith("Scaled down replica set web-") for m in scaled)


def test_recreate_stops_old_pods_first(client: httpx.Client, ns: str, kubectl: Kubectl, manager: None) -> None:
    spec = deployment("db", "nginx:1", 2, strategy={"type": "Recreate"})
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=spec).status_code == 201
    wait_for(lambda: len(pods(client, ns, "app=db")) == 2, what="2 pods")
    for pod in pods(client, ns, "app=db"):
        set_ready(client, pod)
    kubectl("set", "image", "deployment/db", "c=nginx:2", "-n", ns)

    def no_mix(current: list[dict[str, Any]]) -> None:
        images = {image_of(p) for p in current}
        assert len(images) <= 1, f"old and new pods at once: {images}"

    status = rollout_status(kubectl, "db", ns)
    play_kubelet(client, ns, "app=db", status, no_mix)
    finished(status)
    assert {image_of(p) for p in pods(client, ns, "app=db")} == {"nginx:2"}
