"""The master Service's variables of a kubelet without routed ClusterIPs: the ``default/kubernetes`` Endpoints, read
once for every container that starts while the read is in flight (a fresh kubelet handed 33 pods at once sent 33
GETs and held its pods ~0.5 s on them), ahead of the first pod, and again after a failure."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kubeclient import Clientset, FakeAPIServer
from kubelet.serviceenv import MasterServiceEnv, ServiceEnv

ENDPOINTS = {"metadata": {"name": "kubernetes", "namespace": "default"},
             "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 6443}]}]}


class SlowAPIServer(FakeAPIServer):
    """Each request takes a little while, as over the network: requests can overlap."""

    async def request(self, verb: str, path: str, **kwargs: Any) -> Any:
        await asyncio.sleep(0.01)
        return await super().request(verb, path, **kwargs)


def endpoint_gets(fake: FakeAPIServer) -> int:
    return sum(1 for a in fake.actions if a.verb == "GET" and a.path.endswith("/endpoints/kubernetes"))


async def test_containers_starting_together_share_one_read() -> None:
    fake = SlowAPIServer()
    cs = Clientset(fake)
    await cs.endpoints.create(ENDPOINTS, "default")
    master = MasterServiceEnv(cs)
    envs = await asyncio.gather(*(master.get() for _ in range(20)))
    assert endpoint_gets(fake) == 1
    assert all(env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and env["KUBERNETES_SERVICE_PORT"] == "6443"
               for env in envs)
    assert (await master.get())["KUBERNETES_PORT"] == "tcp://127.0.0.1:6443" and endpoint_gets(fake) == 1


async def test_a_failed_warm_up_is_quiet_and_the_first_container_reads_again(
        caplog: pytest.LogCaptureFixture) -> None:
    fake = SlowAPIServer()
    cs = Clientset(fake)
    master = MasterServiceEnv(cs)
    with caplog.at_level(logging.WARNING, logger="kubelet.serviceenv"):
        await master.warm_up()  # no Endpoints yet (the apiserver has not written them)
        assert not caplog.records and master.env is None
        await cs.endpoints.create(ENDPOINTS, "default")
        assert (await master.get())["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert endpoint_gets(fake) == 2 and not caplog.records


async def test_a_container_without_endpoints_is_told_why(caplog: pytest.LogCaptureFixture) -> None:
    master = MasterServiceEnv(Clientset(SlowAPIServer()))
    with caplog.at_level(logging.WARNING, logger="kubelet.serviceenv"):
        assert await master.get() == {}
    assert "containers get no KUBERNETES_SERVICE_*" in caplog.text


async def test_the_kubelet_reads_them_once_the_services_are_listed() -> None:
    fake = SlowAPIServer()
    cs = Clientset(fake)
    await cs.endpoints.create(ENDPOINTS, "default")
    services = ServiceEnv(cs)
    stop = asyncio.Event()
    informer = asyncio.create_task(services.informer.run(stop))
    await asyncio.wait_for(services.warm_up(), 5)
    assert services.master.env is not None and endpoint_gets(fake) == 1
    env = await services.get("default")
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and endpoint_gets(fake) == 1
    stop.set()
    await informer
