"""kubelet.podips: one IP per pod from the Node's podCIDR (network, gateway and broadcast skipped, round-robin),
kept on disk across a restart, released; the host IP while the Node has no CIDR (over the FakeAPIServer)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeclient import Clientset, FakeAPIServer
from kubelet.images import listen_command
from kubelet.kubelet import Kubelet
from kubelet.podips import PodIPs, PoolExhausted


async def test_host_ip_until_the_node_has_a_cidr(tmp_path: Path) -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create({"metadata": {"name": "n1"}, "spec": {}})
    pool = PodIPs(tmp_path, cs, "n1", "127.0.0.1")
    assert await pool.assign("a") == "127.0.0.1"
    await cs.nodes.patch("n1", {"spec": {"podCIDR": "127.16.3.0/24", "podCIDRs": ["127.16.3.0/24"]}}, "merge")
    # the very next pod sees the CIDR: a Node without one is read afresh, no "none" is kept for a while
    assert await pool.assign("a") == "127.16.3.2"  # .0 is the network, .1 the gateway
    assert await pool.assign("b") == "127.16.3.3"
    assert await pool.assign("a") == "127.16.3.2"


def test_round_robin_release_and_restart(tmp_path: Path) -> None:
    pool = PodIPs(tmp_path, None, "n1", "127.0.0.1")
    pool.set_cidr("127.16.0.0/29")  # .2 to .6
    assert [pool.reserve(uid) for uid in "abcd"] == [f"127.16.0.{i}" for i in range(2, 6)]
    pool.release("a")
    assert pool.reserve("e") == "127.16.0.6"
    assert pool.reserve("f") == "127.16.0.2"  # wraps round, past the broadcast address
    with pytest.raises(PoolExhausted, match="no IP addresses available in range set"):
        pool.reserve("g")
    again = PodIPs(tmp_path, None, "n1", "127.0.0.1")  # a restarted kubelet
    assert again.by_uid == {"b": "127.16.0.3", "c": "127.16.0.4", "d": "127.16.0.5", "e": "127.16.0.6",
                            "f": "127.16.0.2"}
    again.release_others({"b", "c"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["127.16.0.3", "127.16.0.4", "last_reserved_ip.0"]


def test_nginx_listens_on_the_pod_ip_and_its_container_port() -> None:
    nginx = {"name": "web", "image": "nginx:1.25"}
    assert listen_command(nginx, "127.16.0.2")["command"][-2:] == ["127.16.0.2", "80"]
    ports = [{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 8080}]
    assert listen_command({**nginx, "ports": ports}, "127.16.0.2")["command"][-2:] == ["127.16.0.2", "8080"]
    custom = {**nginx, "args": ["-g", "daemon off;"]}
    assert listen_command(custom, "127.16.0.2") is custom
    busybox = {"name": "b", "image": "busybox"}
    assert listen_command(busybox, "127.16.0.2") is busybox


async def test_the_kubelets_watch_of_its_node_brings_the_cidr_without_a_read_per_pod(tmp_path: Path) -> None:
    """Once the kubelet's watch of its Node has synced, a pod started while the Node has no CIDR gets the host
    IP without a GET of the Node (one per pod before), and the CIDR holds from the watch event that brings it."""
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create({"metadata": {"name": "n1"}, "spec": {}})
    await cs.nodes.create({"metadata": {"name": "n2"}, "spec": {"podCIDR": "127.16.9.0/24"}})
    kubelet = Kubelet(cs, "n1", tmp_path, "127.0.0.1")
    assert kubelet.node_informer is not None
    stop = asyncio.Event()
    watching = asyncio.create_task(kubelet.node_informer.run(stop))
    try:
        assert await kubelet.node_informer.wait_for_sync(5)
        fake.actions.clear()
        assert [await kubelet.pod_ips.assign(uid) for uid in "ab"] == ["127.0.0.1", "127.0.0.1"]
        assert [a for a in fake.actions if a.path.startswith("/api/v1/nodes")] == []
        await cs.nodes.patch("n1", {"spec": {"podCIDR": "127.16.3.0/24", "podCIDRs": ["127.16.3.0/24"]}}, "merge")
        async with asyncio.timeout(5):
            while kubelet.pod_ips.cidr is None:
                await asyncio.sleep(0.01)
        assert await kubelet.pod_ips.assign("c") == "127.16.3.2"  # its own Node's, not n2's
    finally:
        stop.set()
        await watching
