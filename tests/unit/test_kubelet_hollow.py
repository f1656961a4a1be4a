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
