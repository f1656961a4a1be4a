"""PodDisruptionBudgets with the real apiserver, etcd and a real controller-manager running the disruption and
replicaset controllers; the test plays the scheduler and the kubelets (bindings, Ready). ``kubectl drain`` waits
for the budget as on Kubernetes (429s, "will retry after 5s", drained once replacements are Ready elsewhere),
kubectl 1.32 creates and prints budgets, and the official Python client reads them (PolicyV1Api) and gets the
429 / 500 of refused evictions (CoreV1Api.create_namespaced_pod_eviction)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from conftest import Kubectl, kubectl_release
from support.controllers import ControllerManager, bind, controller_manager_fixture, make_ready_node, pods, set_ready
from support.wait import wait_for

pytestmark = pytest.mark.kubectl


manager = controller_manager_fixture("disruption,replicaset")


def replica_set(client: httpx.Client, ns: str, replicas: int = 3) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
          "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs).status_code == 201


def run_pods(client: httpx.Client, ns: str, node: str) -> int:
    """The scheduler and kubelet of ``node``: every unbound pod goes there and is Ready; how many it took."""
    taken = 0
    for pod in pods(client, ns, "app=web"):
        if not pod["spec"].get("nodeName"):
            bind(client, pod, node)
            set_ready(client, pod)
            taken += 1
    return taken


def pdb_status(client: httpx.Client, ns: str, name: str = "web") -> dict[str, Any]:
    return client.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}").json().get("status") or {}


def allowed(client: httpx.Client, ns: str, expected: int) -> bool:
    return pdb_status(client, ns).get("disruptionsAllowed") == expected


def test_kubectl_creates_validates_and_prints_budgets(kubectl: Kubectl, client: httpx.Client, ns: str,
                                                      manager: ControllerManager) -> None:
    replica_set(client, ns)
    wait_for(lambda: len(pods(client, ns, "app=web")) == 3, what="the ReplicaSet's pods")
    run_pods(client, ns, f"{ns}-n1")
    out = kubectl("-n", ns, "create", "pdb", "web", "--selector=app=web", "--min-available=2").stdout
    assert out.strip() == "poddisruptionbudget.policy/web created"
    kubectl("-n", ns, "create", "pdb", "half", "--selector=app=web", "--max-unavailable=50%")
    wait_for(lambda: allowed(client, ns, 1), what="the budget's status")
    table = wait_for(lambda: (t := kubectl("-n", ns, "get", "pdb").stdout.splitlines())
                     and len(t) == 3 and t[1].split()[3] == "2" and t, what="both budgets counted")
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert [r.split()[:4] for r in table[1:]] == [["half", "N/A", "50%", "2"], ["web", "2", "N/A", "1"]]
    for release in ("1.27", "1.33"):  # older and newer kubectl print the same table
        other = Kubectl(kubectl_release(release), kubectl.server, kubectl.home)
        assert [r.split()[:4] for r in other("-n", ns, "get", "pdb").stdout.splitlines()[1:]] == \
            [["half", "N/A", "50%", "2"], ["web", "2", "N/A", "1"]]
    status = pdb_status(client, ns)
    assert {k: status[k] for k in ("currentHealthy", "desiredHealthy", "expectedPods", "observedGeneration")} == \
        {"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "observedGeneration": 1}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == \
        [("DisruptionAllowed", "True", "SufficientPods")]
    bad = kubectl("-n", ns, "apply", "-f", "-", check=False, input="""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bad}
spec: {minAvailable: 1, maxUnavailable: "200%", selector: {matchLabels: {app: web}}}
""")
    assert bad.returncode != 0
    assert 'The PodDisruptionBudget "bad" is invalid' in bad.stderr
    assert "minAvailable and maxUnavailable cannot be both set" in bad.stderr
    assert 'spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"200%"}: must not be ' \
           "greater than 100%" in bad.stderr


def test_drain_waits_for_the_budget(kubectl: Kubectl, client: httpx.Client, ns: str,
                                    manager: ControllerManager) -> None:
    n1, n2 = f"{ns}-n1", f"{ns}-n2"
    make_ready_node(client, n1)
    make_ready_node(client, n2)
    replica_set(client, ns)
    wait_for(lambda: len(pods(client, ns, "app=web")) == 3, what="the ReplicaSet's pods")
    run_pods(client, ns, n1)
    kubectl("-n", ns, "create", "pdb", "web", "--selector=app=web", "--min-available=2")
    wait_for(lambda: allowed(client, ns, 1), what="one disruption allowed")
    done = threading.Event()

    def drain() -> Any:
        try:
            return kubectl("drain", n1, "--ignore-daemonsets", "--grace-period=0", timeout=120, check=False)
        finally:
            done.set()

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(drain)
        replaced = 0
        while not done.wait(0.3):  # the replacements go to n2 and become Ready there
            replaced += run_pods(client, ns, n2)
        drained = result.result()
    assert drained.returncode == 0, drained.stderr
    assert "node/" + n1 + " drained" in drained.stdout
    assert "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget." in \
        drained.stderr
    assert replaced >= 2  # the last replacement may come after drain ends: drain waits for deletions only
    wait_for(lambda: run_pods(client, ns, n2) >= 0 and [p["spec"].get("nodeName") for p in pods(client, ns, "app=web")]
             == [n2] * 3, what="all three pods on n2")
    wait_for(lambda: allowed(client, ns, 1) and not pdb_status(client, ns).get("disruptedPods"),
             what="the budget back to one disruption, no pod pending deletion")


def test_python_client_reads_budgets_and_gets_refused_evictions(api: Any, client: httpx.Client, ns: str,
                                                                manager: ControllerManager) -> None:
    replica_set(client, ns, replicas=2)
    wait_for(lambda: len(pods(client, ns, "app=web")) == 2, what="the ReplicaSet's pods")
    run_pods(client, ns, f"{ns}-n1")
    policy, core = k8s.PolicyV1Api(api), k8s.CoreV1Api(api)
    policy.create_namespaced_pod_disruption_budget(ns, k8s.V1PodDisruptionBudget(
        metadata=k8s.V1ObjectMeta(name="web"), spec=k8s.V1PodDisruptionBudgetSpec(
            max_unavailable=0, selector=k8s.V1LabelSelector(match_labels={"app": "web"}))))
    wait_for(lambda: pdb_status(client, ns).get("currentHealthy") == 2, what="the budget's status")
    budget = policy.read_namespaced_pod_disruption_budget("web", ns)
    assert (budget.status.expected_pods, budget.status.desired_healthy, budget.status.disruptions_allowed) == (2, 2, 0)
    assert [b.metadata.name for b in policy.list_namespaced_pod_disruption_budget(ns).items] == ["web"]
    name = pods(client, ns, "app=web")[0]["metadata"]["name"]
    eviction = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=name, namespace=ns))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction(name, ns, eviction)
    assert refused.value.status == 429
    assert '"reason":"DisruptionBudget"' in refused.value.body.replace(" ", "")
    assert "The disruption budget web needs 2 healthy pods and has 2 currently" in refused.value.body
    budget.spec.max_unavailable = 1
    policy.replace_namespaced_pod_disruption_budget("web", ns, budget)
    wait_for(lambda: (s := pdb_status(client, ns)).get("observedGeneration") == 2 and s["disruptionsAllowed"] == 1,
             what="the changed budget counted")
    dry = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=name), delete_options=k8s.V1DeleteOptions(dry_run=["All"]))
    core.create_namespaced_pod_eviction(name, ns, dry)
    assert client.get(f"/api/v1/namespaces/{ns}/pods/{name}").status_code == 200
    assert pdb_status(client, ns)["disruptionsAllowed"] == 1  # a dry run changes nothing
    policy.create_namespaced_pod_disruption_budget(ns, k8s.V1PodDisruptionBudget(
        metadata=k8s.V1ObjectMeta(name="second"), spec=k8s.V1PodDisruptionBudgetSpec(
            min_available="10%", selector=k8s.V1LabelSelector(match_labels={"app": "web"}))))
    with pytest.raises(ApiException) as two:
        core.create_namespaced_pod_eviction(name, ns, eviction)
    assert two.value.status == 500
    assert "This pod has more than one PodDisruptionBudget" in two.value.body
    policy.delete_namespaced_pod_disruption_budget("second", ns)
    core.create_namespaced_pod_eviction(name, ns, eviction)
    evicted = client.get(f"/api/v1/namespaces/{ns}/pods/{name}").json()
    assert evicted["metadata"].get("deletionTimestamp")
    assert ("DisruptionTarget", "True", "EvictionByEvictionAPI") in {
        (c["type"], c["status"], c.get("reason")) for c in evicted["status"]["conditions"]}
    # the eviction recorded the pod in disruptedPods; the controller drops it once it sees the pod terminating
    wait_for(lambda: (s := pdb_status(client, ns)).get("currentHealthy") == 1 and s["disruptionsAllowed"] == 0
             and not s.get("disruptedPods"), what="the evicted pod no longer counted")
