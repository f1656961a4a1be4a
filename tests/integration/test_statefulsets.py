"""StatefulSets with a real controller-manager (statefulset and garbage collector) and the real kubectl: pods made
in ordinal order (web-1 only once web-0 is Running and Ready), one claim per template and ordinal kept across
scale down and up, ``kubectl scale/rollout status/history/undo/restart/describe sts``, a partitioned rolling
update, OnDelete, claims owned per persistentVolumeClaimRetentionPolicy, kube's validation messages, and the Python
client.  The test plays the kubelet: it marks pods Running and Ready (no scheduler runs here; the statefulset
controller does not need pods to be bound).
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import httpx

from conftest import Kubectl
from support.controllers import controller_manager_fixture, pods, set_ready
from support.wait import wait_for

manager = controller_manager_fixture("statefulset,garbagecollector")


def statefulset(name: str = "web", image: str = "nginx:1", replicas: int = 3, claims: bool = True,
                **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
        "spec": {"serviceName": "nginx", "replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "nginx", "image": image}]}}, **spec}}
    if claims:
        body["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "www"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
            "resources": {"requests": {"storage": "1Gi"}}}}]
    return body


def sts_path(ns: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{ns}/statefulsets/{name}"


def status(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return dict(client.get(sts_path(ns, name)).json().get("status") or {})


def names(client: httpx.Client, ns: str, selector: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods(client, ns, selector))


def images(client: httpx.Client, ns: str, selector: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods(client, ns, selector)}


def claims(client: httpx.Client, ns: str) -> dict[str, str]:
    """claim name → uid."""
    items = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims").json()["items"]
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in items}


def ready_all(client: httpx.Client, ns: str, selector: str) -> None:
    """What kubelets do: every live pod not yet Running becomes Running and Ready."""
    for pod in pods(client, ns, selector):
        if (pod.get("status") or {}).get("phase") != "Running":
            set_ready(client, pod)


def converge(client: httpx.Client, ns: str, selector: str, check: Any, what: str) -> Any:
    def step() -> Any:
        ready_all(client, ns, selector)
        return check()
    return wait_for(step, what=what)


def synced(client: httpx.Client, ns: str, name: str, **expected: Any) -> bool:
    """The controller has seen the set's generation and its status has the ``expected`` counts."""
    body = client.get(sts_path(ns, name)).json()
    current = body.get("status") or {}
    return current.get("observedGeneration") == body["metadata"]["generation"] and \
        all(current.get(k, 0) == v for k, v in expected.items())


def test_ordered_start_claims_and_scaling(client: httpx.Client, ns: str, kubectl: Kubectl, manager: Any) -> None:
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(statefulset()))
    for ordinal in range(3):
        # the controller has seen this pod (status counts it) and made no successor while it is not Ready
        wait_for(lambda ordinal=ordinal: synced(client, ns, "web", replicas=ordinal + 1), what=f"web-{ordinal} seen")
        assert names(client, ns, "app=web") == [f"web-{i}" for i in range(ordinal + 1)]
        set_ready(client, pods(client, ns, "app=web")[-1] if ordinal == 0 else
                  next(p for p in pods(client, ns, "app=web") if p["metadata"]["name"] == f"web-{ordinal}"))
    wait_for(lambda: synced(client, ns, "web", readyReplicas=3, availableReplicas=3, currentReplicas=3),
             what="3 ready")
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/web-1").json()
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "nginx")
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-1" and labels["apps.kubernetes.io/pod-index"] == "1"
    assert labels["controller-revision-hash"] == status(client, ns, "web")["updateRevision"]
    assert {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}} in pod["spec"]["volumes"]
    before = claims(client, ns)
    assert sorted(before) == ["www-web-0", "www-web-1", "www-web-2"]

    table = kubectl("get", "sts", "-n", ns, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert table[1].split()[:2] == ["web", "3/3"] and table[1].split()[-2:] == ["nginx", "nginx:1"]
    described = kubectl("describe", "sts", "web", "-n", ns).stdout
    assert "Pods Status:        3 Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "SuccessfulCreate  " in described and "create Pod web-2 in StatefulSet web successful" in described
    assert "create Claim www-web-0 Pod web-0 in StatefulSet web success" in described
    assert "Volume Claims:" in described and "Name:          www" in described

    assert "statefulset.apps/web scaled" in kubectl("scale", "sts", "web", "--replicas=1", "-n", ns).stdout
    wait_for(lambda: names(client, ns, "app=web") == ["web-0"], what="scaled down to web-0")
    assert claims(client, ns) == before  # whenScaled: Retain
    kubectl("scale", "sts", "web", "--replicas=3", "-n", ns)
    converge(client, ns, "app=web", lambda: synced(client, ns, "web", readyReplicas=3), what="scaled up again")
    assert claims(client, ns) == before  # the same claims, not new ones
    assert (kubectl("get", "sts", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout,
            kubectl("get", "--raw", f"{sts_path(ns, 'web')}/scale").stdout.count('"replicas":3')) == ("3", 2)

    kubectl("delete", "sts", "web", "-n", ns)
    wait_for(lambda: not pods(client, ns, "app=web"), what="pods deleted by the garbage collector")
    assert claims(client, ns) == before  # whenDeleted: Retain


def rollout_status(kubectl: Kubectl, name: str, ns: str) -> subprocess.Popen[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(kubectl.home), "KUBECONFIG": str(kubectl.home / "none")}
    return subprocess.Popen([kubectl.binary, "-s", kubectl.server, "rollout", "status", f"sts/{name}", "-n", ns,
                             "--timeout=60s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def play_kubelet(client: httpx.Client, ns: str, selector: str, until: subprocess.Popen[str]) -> str:
    """Mark pods Ready until ``until`` exits; return its output."""
    deadline = time.monotonic() + 60
    try:
        while until.poll() is None:
            assert time.monotonic() < deadline, "rollout did not finish"
            ready_all(client, ns, selector)
            time.sleep(0.1)
    except BaseException:
        until.kill()
        until.communicate()
        raise
    out, _ = until.communicate(timeout=30)
    assert until.returncode == 0, out
    return out


def test_partitioned_rolling_update_and_rollout(client: httpx.Client, ns: str, kubectl: Kubectl,
                                                manager: Any) -> None:
    spec = statefulset("db", claims=False, podManagementPolicy="Parallel",
                       updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(spec))
    out = play_kubelet(client, ns, "app=db", rollout_status(kubectl, "db", ns))
    assert "partitioned roll out complete: 3 new pods have been updated..." in out

    kubectl("set", "image", "sts/db", "nginx=nginx:2", "-n", ns)
    out = play_kubelet(client, ns, "app=db", rollout_status(kubectl, "db", ns))
    assert out.splitlines()[-1] == "partitioned roll out complete: 1 new pods have been updated..."
    assert images(client, ns, "app=db") == {"db-0": "nginx:1", "db-1": "nginx:1", "db-2": "nginx:2"}
    current = status(client, ns, "db")
    assert current["currentRevision"] != current["updateRevision"]
    assert (current["currentReplicas"], current["updatedReplicas"]) == (2, 1)

    kubectl("patch", "sts", "db", "-n", ns, "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}')
    out = play_kubelet(client, ns, "app=db", rollout_status(kubectl, "db", ns))
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    assert set(images(client, ns, "app=db").values()) == {"nginx:2"}
    wait_for(lambda: (s := status(client, ns, "db")).get("currentRevision") == s.get("updateRevision"),
             what="the update revision is current")
    history = kubectl("rollout", "history", "sts/db", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    assert "statefulset.apps/db rolled back" in kubectl("rollout", "undo", "sts/db", "-n", ns).stdout
    play_kubelet(client, ns, "app=db", rollout_status(kubectl, "db", ns))
    converge(client, ns, "app=db", lambda: set(images(client, ns, "app=db").values()) == {"nginx:1"},
             what="rolled back to nginx:1")
    assert "statefulset.apps/db restarted" in kubectl("rollout", "restart", "sts/db", "-n", ns).stdout
    converge(client, ns, "app=db", lambda: all("kubectl.kubernetes.io/restartedAt" in (
        p["metadata"].get("annotations") or {}) for p in pods(client, ns, "app=db")) and len(
        pods(client, ns, "app=db")) == 3, what="pods restarted")
    revisions = kubectl("get", "controllerrevisions", "-n", ns).stdout.splitlines()
    assert sorted(r.split()[1:3] for r in revisions[1:]) == [["statefulset.apps/db", "2"],
                                                              ["statefulset.apps/db", "3"],
                                                              ["statefulset.apps/db", "4"]]


def test_on_delete_replaces_only_deleted_pods(client: httpx.Client, ns: str, kubectl: Kubectl,
                                              manager: Any) -> None:
    spec = statefulset("od", replicas=2, claims=False, updateStrategy={"type": "OnDelete"})
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(spec))
    converge(client, ns, "app=od", lambda: synced(client, ns, "od", readyReplicas=2), what="2 ready")
    kubectl("set", "image", "sts/od", "nginx=nginx:2", "-n", ns)
    wait_for(lambda: synced(client, ns, "od", updatedReplicas=0, currentReplicas=2), what="update observed")
    assert images(client, ns, "app=od") == {"od-0": "nginx:1", "od-1": "nginx:1"}
    out = kubectl("rollout", "status", "sts/od", "-n", ns, check=False)
    assert "rollout status is only available for RollingUpdate strategy type" in out.stderr
    kubectl("delete", "pod", "od-1", "-n", ns)
    converge(client, ns, "app=od", lambda: images(client, ns, "app=od") == {"od-0": "nginx:1", "od-1": "nginx:2"},
             what="od-1 recreated from the new template")


def test_validation_as_kube(kubectl: Kubectl, ns: str, manager: Any) -> None:
    bad = statefulset("bad", podManagementPolicy="Sometimes", replicas=-1)
    out = kubectl("create", "-n", ns, "-f", "-", input=json.dumps(bad), check=False).stderr
    assert 'The StatefulSet "bad" is invalid: ' in out
    assert "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'" in out
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in out
    kubectl("create", "-n", ns, "-f", "-", input=json.dumps(statefulset("ok", replicas=0)))
    out = kubectl("patch", "sts", "ok", "-n", ns, "-p", '{"spec":{"serviceName":"other"}}', check=False).stderr
    assert "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', " \
           "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are " \
           "forbidden" in out
    api_resources = kubectl("api-resources", "--api-group=apps").stdout
    assert any(line.split()[:5] == ["statefulsets", "sts", "apps/v1", "true", "StatefulSet"]
               for line in api_resources.splitlines())


def test_python_client(api: Any, ns: str, manager: Any) -> None:
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(api)
    created = apps.create_namespaced_stateful_set(ns, statefulset("py", replicas=0, ordinals={"start": 5}))
    assert created.spec.pod_management_policy == "OrderedReady"
    assert created.spec.update_strategy.rolling_update.partition == 0
    assert created.spec.persistent_volume_claim_retention_policy.when_deleted == "Retain"
    assert created.spec.volume_claim_templates[0].spec.volume_mode == "Filesystem"
    apps.patch_namespaced_stateful_set_scale("py", ns, {"spec": {"replicas": 1}})
    pod = wait_for(lambda: next(iter(k8s.CoreV1Api(api).list_namespaced_pod(ns, label_selector="app=py").items),
                                None), what="pod of ordinal 5")
    assert pod.metadata.name == "py-5" and pod.metadata.labels["apps.kubernetes.io/pod-index"] == "5"
    scale = apps.read_namespaced_stateful_set_scale("py", ns)
    assert (scale.spec.replicas, scale.status.selector) == (1, "app=py")
    read = wait_for(lambda: (s := apps.read_namespaced_stateful_set_status("py", ns)).status.replicas == 1 and s,
                    what="status counts the pod")
    assert read.status.update_revision.startswith("py-") and read.status.observed_generation == 2


def test_claims_follow_the_retention_policy(client: httpx.Client, ns: str, kubectl: Kubectl, manager: Any) -> None:
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(statefulset(
        "rp", replicas=2, podManagementPolicy="Parallel", persistentVolumeClaimRetentionPolicy=policy)))
    converge(client, ns, "app=rp", lambda: synced(client, ns, "rp", readyReplicas=2), what="2 ready")
    uid = client.get(sts_path(ns, "rp")).json()["metadata"]["uid"]

    def owners(claim: str) -> list[tuple[str, str]]:
        body = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claim}").json()
        return [(r["kind"], r["uid"]) for r in body["metadata"].get("ownerReferences") or []]

    def deleting(claim: str) -> bool:
        resp = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claim}")
        return resp.status_code == 404 or bool(resp.json()["metadata"].get("deletionTimestamp"))

    wait_for(lambda: owners("www-rp-0") == owners("www-rp-1") == [("StatefulSet", uid)], what="claims owned by set")
    kubectl("scale", "sts", "rp", "--replicas=1", "-n", ns)
    # whenScaled: Delete: the scaled-down pod's claim passes to the pod, and goes with it
    wait_for(lambda: deleting("www-rp-1"), what="www-rp-1 deleted after rp-1")
    assert not deleting("www-rp-0") and owners("www-rp-0") == [("StatefulSet", uid)]
    kubectl("delete", "sts", "rp", "-n", ns, "--wait=false")
    wait_for(lambda: deleting("www-rp-0"), what="www-rp-0 deleted with the set (whenDeleted: Delete)")
