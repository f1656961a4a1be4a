"""kubelet.podips: one IP per pod from the Node's podCIDR (network, gateway and broadcast skipped, round-robin),
kept on disk across a restart, released; the host IP while the Node has no CIDR (over the FakeAPIServer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeclient import Clientset, FakeAPIServer
from kubelet.images import listen_command
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
