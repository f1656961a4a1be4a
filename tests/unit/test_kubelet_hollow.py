"""kubelet.hollow over the in-memory FakeAPIServer: simulated nodes register as a kubelet does, retrying when the
apiserver refuses, and give up only when told to stop."""

from __future__ import annotations

import asyncio

from apimachinery.errors import ServiceUnavailable
from kubeclient import NODES, Clientset, FakeAPIServer
from kubelet.hollow import HOLLOW_LABEL, HollowNodes

CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110"}


async def test_registration_is_retried_until_the_apiserver_accepts() -> None:
    fake = FakeAPIServer()
    fake.fail_next(ServiceUnavailable("the apiserver is starting"), verb="POST", path="/api/v1/nodes", times=5)
    nodes = HollowNodes(Clientset(fake), prefix="h-", count=3, capacity=CAPACITY)
    assert await asyncio.wait_for(nodes.register(), 10)
    registered = fake.objects(NODES)
    assert sorted(n["metadata"]["name"] for n in registered) == ["h-0", "h-1", "h-2"]
    assert all(n["metadata"]["labels"][HOLLOW_LABEL] == "true" for n in registered)
    assert sum(a.verb == "POST" and a.path == "/api/v1/nodes" for a in fake.actions) == 3 + 5  # 5 refused, retried


async def test_registration_gives_up_when_told_to_stop() -> None:
    fake = FakeAPIServer()
    fake.fail_next(ServiceUnavailable("the apiserver is away"), verb="POST", path="/api/v1/nodes", times=1_000_000)
    nodes = HollowNodes(Clientset(fake), prefix="h-", count=2, capacity=CAPACITY)
    stop = asyncio.Event()
    registering = asyncio.create_task(nodes.register(stop))
    await asyncio.sleep(0.3)
    assert not registering.done()  # still retrying
    stop.set()
    assert await asyncio.wait_for(registering, 2) is False
    assert fake.objects(NODES) == []


async def test_leases_are_renewed_each_at_its_node_offset_not_in_one_burst() -> None:
    """As N kubelets on their own clocks: node i's renewal goes out no earlier than ``interval * i / N`` into the
    round; the first round goes out at once, so every node has its Lease as it comes up."""
    fake = FakeAPIServer()
    nodes = HollowNodes(Clientset(fake), prefix="h-", count=8, capacity=CAPACITY, lease_interval=60.0,
                        status_interval=3600.0)
    renewed: dict[str, float] = {}
    loop = asyncio.get_running_loop()

    async def renew(name: str) -> None:
        renewed[name] = loop.time()

    nodes._renew = renew  # type: ignore[method-assign]
    stop = asyncio.Event()
    heartbeat = asyncio.create_task(nodes.heartbeat(stop))
    for _ in range(2000):  # up to ~20 s: spread over the 60 s interval, node 7's would come after 52 s
        if len(renewed) == 8:
            break
        await asyncio.sleep(0.01)
    assert sorted(renewed) == [f"h-{i}" for i in range(8)]
    stop.set()
    await asyncio.wait_for(heartbeat, 5)
    renewed.clear()
    began = loop.time()
    await asyncio.wait_for(nodes._renew_spread(began, asyncio.Event(), 0.8), 5)
    assert sorted(renewed, key=renewed.__getitem__) == [f"h-{i}" for i in range(8)]
    for i in range(8):
        assert renewed[f"h-{i}"] >= began + 0.1 * i - 0.05, (i, renewed[f"h-{i}"] - began)


async def test_a_lease_round_ends_at_stop() -> None:
    fake = FakeAPIServer()
    nodes = HollowNodes(Clientset(fake), prefix="h-", count=4, capacity=CAPACITY)
    renewed: list[str] = []

    async def renew(name: str) -> None:
        renewed.append(name)

    nodes._renew = renew  # type: ignore[method-assign]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    round_ = asyncio.create_task(nodes._renew_spread(loop.time(), stop, 60.0))
    await asyncio.sleep(0.1)
    stop.set()
    await asyncio.wait_for(round_, 2)
    assert renewed == ["h-0"]  # the others were due 15, 30 and 45 s into the round
