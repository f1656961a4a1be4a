"""controllers.daemonset over the FakeAPIServer, and the pure rules of controllers.support.daemonutil: which nodes run a
daemon (selectors, affinity, taints against the automatic tolerations), the pods it creates, the RollingUpdate
steps and the status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controllers.daemonset import DaemonSetController
from controllers.manager import enabled_controllers
from controllers.support import daemonutil
from kubeclient import CONTROLLER_REVISIONS, DAEMON_SETS, PODS, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until

NS = "default"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                             "lastTransitionTime": "2025-12-31T00:00:00Z"}]}


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []}}


def daemonset(name: str = "agent", image: str = "busybox", generation: str = "1", **spec: Any) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "agent", "image": image}], "restartPolicy": "Always",
                **spec.pop("pod", {})}
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "annotations": {daemonutil.TEMPLATE_GENERATION_ANNOTATION: generation}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}, **spec}}


def placed(fake: FakeAPIServer) -> list[str]:
    return sorted(daemonutil.target_node(p) for p in fake.objects(PODS, NS) if not p["metadata"].get(
        "deletionTimestamp"))


def controller(cs: Clientset, factory: InformerFactory) -> DaemonSetController:
    return DaemonSetController(cs, factory)


# --- pure rules -----------------------------------------------------------------------------------------------


def test_nodes_admitted_by_selector_affinity_and_taints() -> None:
    ds = daemonset(pod={"nodeSelector": {"disk": "ssd"}})
    assert daemonutil.node_should_run(ds, node("a", {"disk": "ssd"})) == (True, True)
    assert daemonutil.node_should_run(ds, node("b")) == (False, False)
    plain = daemonset()
    no_schedule = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    assert daemonutil.node_should_run(plain, node("c", taints=[no_schedule])) == (False, True)
    assert daemonutil.node_should_run(plain, node("d", taints=[{"key": "x", "effect": "NoExecute"}])) == (False, False)
    for key, effect in (("node.kubernetes.io/unschedulable", "NoSchedule"), ("node.kubernetes.io/not-ready",
                                                                            "NoExecute")):
        assert daemonutil.node_should_run(plain, node("e", taints=[{"key": key, "effect": effect}])) == (True, True)
    network = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    assert daemonutil.node_should_run(plain, node("f", taints=[network]))[0] is False
    assert daemonutil.node_should_run(daemonset(pod={"hostNetwork": True}), node("f", taints=[network]))[0] is True
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}}}
    assert daemonutil.node_should_run(daemonset(pod={"affinity": affinity}), node("g", {"zone": "z2"}))[0] is False


def test_new_pod_is_bound_through_node_affinity_and_labelled() -> None:
    ds = daemonset(pod={"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                         "effect": "NoSchedule"}]})
    ref = {"kind": "DaemonSet", "uid": "uid-agent", "controller": True}
    pod = daemonutil.new_pod(ds, "node02", "abc123", ref)
    assert pod["metadata"]["generateName"] == "agent-"
    assert pod["metadata"]["labels"] == {"app": "agent", "controller-revision-hash": "abc123",
                                         "pod-template-generation": "1"}
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node02"]}]}]}
    assert "nodeName" not in pod["spec"]
    keys = [(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]]
    assert len(keys) == len(set(keys)) == 6
    assert daemonutil.target_node(pod) == "node02"
    assert ds["spec"]["template"]["spec"].get("affinity") is None  # the DaemonSet itself is untouched


def test_rolling_update_without_surge_respects_max_unavailable() -> None:
    ds = daemonset(generation="2")
    old = [{"metadata": {"name": f"p{i}", "labels": {"pod-template-generation": "1"}}, "status": READY}
           for i in range(3)]
    node_pods = {f"n{i}": [p] for i, p in enumerate(old)}
    assert [p["metadata"]["name"] for p in daemonutil.pods_to_replace(ds, node_pods, "h", NOW).delete] == ["p0"]
    node_pods["n0"] = []  # being replaced: no more room
    assert daemonutil.pods_to_replace(ds, node_pods, "h", NOW).delete == []
    unready = {"metadata": {"name": "u", "labels": {}}, "status": {"phase": "Pending"}}
    node_pods["n0"] = [unready]  # an unavailable old pod always goes, and does not use up maxUnavailable (as kube)
    assert [p["metadata"]["name"] for p in daemonutil.pods_to_replace(ds, node_pods, "h", NOW).delete] == ["u", "p1"]


def test_rolling_update_with_surge_starts_new_pods_first() -> None:
    ds = daemonset(generation="2")
    ds["spec"]["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": 1}
    old = {"metadata": {"name": "old", "labels": {"pod-template-generation": "1"}}, "status": READY}
    new = {"metadata": {"name": "new", "labels": {"pod-template-generation": "2"}}, "status": {"phase": "Pending"}}
    step = daemonutil.pods_to_replace(ds, {"n0": [old], "n1": [dict(old)]}, "h", NOW)
    assert step.create_on == ["n0"] and step.delete == []
    assert daemonutil.pods_to_replace(ds, {"n0": [old, new], "n1": [dict(old)]}, "h", NOW).create_on == []
    ready_new = {**new, "status": READY}
    assert daemonutil.pods_to_replace(ds, {"n0": [old, ready_new]}, "h", NOW).delete == [old]


def test_status_counts_nodes() -> None:
    ds = daemonset()
    ds["metadata"]["generation"] = 3
    current = {"metadata": {"name": "a", "labels": {"pod-template-generation": "1"}}, "status": READY}
    status = daemonutil.calculate_status(ds, {"n0": [current], "n1": [], "n2": [dict(current)]}, {"n0", "n1"}, "h",
                                         NOW)
    assert status == {"currentNumberScheduled": 1, "numberMisscheduled": 1, "desiredNumberScheduled": 2,
                      "numberReady": 1, "observedGeneration": 3, "updatedNumberScheduled": 1, "numberAvailable": 1,
                      "numberUnavailable": 1}


def test_daemonset_controller_is_on_by_default() -> None:
    assert "daemonset-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["daemonset"]) == ["daemonset-controller"]


# --- the controller -------------------------------------------------------------------------------------------


async def test_one_pod_per_node_following_nodes() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    for name in ("n1", "n2"):
        await cs.nodes.create(node(name))
    await cs.daemon_sets.create(daemonset(), NS)
    async with running(controller, fake):
        await until(lambda: placed(fake) == ["n1", "n2"])
        await cs.nodes.create(node("n3"))
        await until(lambda: placed(fake) == ["n1", "n2", "n3"])
        await cs.nodes.delete("n1")
        await until(lambda: placed(fake) == ["n2", "n3"])
        taint = {"key": "evict", "effect": "NoExecute"}
        await cs.nodes.patch("n2", {"spec": {"taints": [taint]}}, "merge")
        await until(lambda: placed(fake) == ["n3"])
        await until(lambda: (fake.objects(DAEMON_SETS, NS)[0].get("status") or {}).get("desiredNumberScheduled") == 1)
    pod = fake.objects(PODS, NS)[0]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert pod["metadata"]["ownerReferences"][0]["controller"] is True


async def test_node_selector_follows_relabelled_nodes() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create(node("n1", {"role": "edge"}))
    await cs.nodes.create(node("n2"))
    await cs.daemon_sets.create(daemonset(pod={"nodeSelector": {"role": "edge"}}), NS)
    async with running(controller, fake):
        await until(lambda: placed(fake) == ["n1"])
        await cs.nodes.patch("n2", {"metadata": {"labels": {"role": "edge"}}}, "merge")
        await until(lambda: placed(fake) == ["n1", "n2"])
        await cs.nodes.patch("n1", {"metadata": {"labels": {"role": None}}}, "merge")
        await until(lambda: placed(fake) == ["n2"])


async def test_template_change_replaces_pods_unless_on_delete() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create(node("n1"))
    await cs.daemon_sets.create(daemonset(updateStrategy={"type": "OnDelete"}), NS)

    def generations() -> list[str]:
        return [p["metadata"]["labels"]["pod-template-generation"] for p in fake.objects(PODS, NS)]

    async with running(controller, fake):
        await until(lambda: generations() == ["1"])
        image = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "nginx"}]}}},
                 "metadata": {"annotations": {daemonutil.TEMPLATE_GENERATION_ANNOTATION: "2"}}}
        await cs.daemon_sets.patch("agent", image, "strategic", NS)
        await until(lambda: (fake.objects(DAEMON_SETS, NS)[0].get("status") or {}).get("observedGeneration") == 2)
        assert generations() == ["1"]  # OnDelete: the old pod stays
        rolling = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}}
        await cs.daemon_sets.patch("agent", rolling, "merge", NS)
        await until(lambda: generations() == ["2"])


def revisions(fake: FakeAPIServer) -> list[tuple[int, str]]:
    return sorted((r["revision"], r["data"]["spec"]["template"]["spec"]["containers"][0]["image"])
                  for r in fake.objects(CONTROLLER_REVISIONS, NS))


async def test_revisions_follow_the_template_and_undo_renumbers() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create(node("n1"))
    await cs.daemon_sets.create(daemonset(revisionHistoryLimit=1), NS)

    def hashes() -> set[str]:
        return {p["metadata"]["labels"]["controller-revision-hash"] for p in fake.objects(PODS, NS)}

    async def set_image(image: str, generation: str) -> None:
        body = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": image}]}}},
                "metadata": {"annotations": {daemonutil.TEMPLATE_GENERATION_ANNOTATION: generation}}}
        await cs.daemon_sets.patch("agent", body, "strategic", NS)

    async with running(controller, fake):
        await until(lambda: revisions(fake) == [(1, "busybox")])
        first = fake.objects(CONTROLLER_REVISIONS, NS)[0]
        assert first["metadata"]["name"] == f"agent-{first['metadata']['labels']['controller.kubernetes.io/hash']}"
        assert first["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        assert first["data"]["spec"]["template"]["$patch"] == "replace"
        await until(lambda: hashes() == {first["metadata"]["labels"]["controller.kubernetes.io/hash"]})
        await set_image("nginx", "2")
        await until(lambda: revisions(fake) == [(1, "busybox"), (2, "nginx")])
        await until(lambda: hashes() != {first["metadata"]["labels"]["controller.kubernetes.io/hash"]})
        await set_image("busybox", "3")  # what kubectl rollout undo does: the old revision is the newest again
        await until(lambda: revisions(fake) == [(2, "nginx"), (3, "busybox")])
        await set_image("redis", "4")  # revisionHistoryLimit 1: the oldest unused revision goes
        await until(lambda: revisions(fake) == [(3, "busybox"), (4, "redis")])
