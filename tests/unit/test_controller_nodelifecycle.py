"""controllers.nodelifecycle: which taints a node's conditions call for, and the heartbeat clock, driven over the
FakeAPIServer with a fake monotonic clock."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from controllers.nodelifecycle import NodeLifecycleController, desired_taints, reconcile_taints
from kubeclient import LEASES, NODES, Clientset, FakeAPIServer, InformerFactory


def node(ready: str | None, unschedulable: bool = False, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready, "lastHeartbeatTime": "2024-05-01T00:00:00Z"}] if ready else []
    return {"metadata": {"name": "n1"}, "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"conditions": conditions}}


def test_desired_taints() -> None:
    assert desired_taints(node("True")) == (set(), set())
    assert desired_taints(node("Unknown")) == ({"node.kubernetes.io/unreachable"}, {"node.kubernetes.io/unreachable"})
    assert desired_taints(node("False", unschedulable=True)) == (
        {"node.kubernetes.io/not-ready"}, {"node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable"})


def test_reconcile_keeps_foreign_taints_and_swaps_managed_ones() -> None:
    mine = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "t0"}
    user = {"key": "check", "value": "mycheck", "effect": "NoExecute"}
    out = reconcile_taints([user, mine], {"node.kubernetes.io/unreachable"}, set(), "t1")
    assert out == [user, {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "t1"}]
    assert reconcile_taints(out, set(), set(), "t2") == [user]
    assert reconcile_taints([user, mine], {"node.kubernetes.io/not-ready"}, set(), "t3") == [user, mine]


async def test_missed_heartbeats_mark_unknown_and_taint() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create(node("True"))
    await cs.leases.create({"metadata": {"name": "n1", "namespace": "kube-node-lease"},
                            "spec": {"renewTime": "2024-05-01T00:00:00.000000Z"}})
    clock = [100.0]
    factory = InformerFactory(cs)
    controller = NodeLifecycleController(cs, factory, grace_period=40, monitor_period=3600, clock=lambda: clock[0])
    stop = asyncio.Event()
    factory.start(stop)
    task = asyncio.create_task(controller.run(stop))
    try:
        await asyncio.sleep(0.2)
        assert fake.objects(NODES)[0]["status"]["conditions"][0]["status"] == "True"
        clock[0] += 30  # a lease renewal within the grace period resets the clock
        await cs.leases.patch("n1", {"spec": {"renewTime": "2024-05-01T00:00:30.000000Z"}},
                              namespace="kube-node-lease")
        await asyncio.sleep(0.2)
        clock[0] += 30
        controller.queue.add("n1")
        await asyncio.sleep(0.2)
        assert fake.objects(NODES)[0]["status"]["conditions"][0]["status"] == "True"
        clock[0] += 11  # 41 s since the last renewal
        seen = controller.node_informer.indexer.get_by_key("n1")  # the informer's object: never written to
        before = copy.deepcopy(seen)
        controller.queue.add("n1")
        for _ in range(100):
            stored = fake.objects(NODES)[0]
            if stored.get("spec", {}).get("taints"):
                break
            await asyncio.sleep(0.02)
        ready = stored["status"]["conditions"][0]
        assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
        assert {(t["key"], t["effect"]) for t in stored["spec"]["taints"]} == {
            ("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")}
        assert len(fake.objects(LEASES, "kube-node-lease")) == 1
        assert seen == before
    finally:
        stop.set()
        await asyncio.wait_for(task, 3)
        await factory.shutdown()
        await controller.recorder.close()
