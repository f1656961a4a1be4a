"""controllers.nodeipam: the CIDR set's round-robin and bounds, and the range allocator over the FakeAPIServer
(a CIDR per Node, set rebuilt from existing Nodes, freed on delete, CIDRNotAvailable when full)."""

from __future__ import annotations

import pytest

from controllers.cli import parse_args
from controllers.manager import enabled_controllers
from controllers.nodeipam import CIDRRangeFull, CidrSet, NodeIpamController
from kubeclient import EVENTS, NODES, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until


def test_cidr_set_hands_out_round_robin_and_frees() -> None:
    cidrs = CidrSet("127.16.0.0/22", 24)
    assert [cidrs.allocate_next() for _ in range(3)] == ["127.16.0.0/24", "127.16.1.0/24", "127.16.2.0/24"]
    cidrs.release("127.16.0.0/24")
    assert cidrs.allocate_next() == "127.16.3.0/24"  # the search goes on after the last one handed out
    assert cidrs.allocate_next() == "127.16.0.0/24"
    with pytest.raises(CIDRRangeFull):
        cidrs.allocate_next()


def test_cidr_set_occupy_and_bounds() -> None:
    cidrs = CidrSet("127.16.0.0/23", 24)
    cidrs.occupy("127.16.0.0/24")
    assert cidrs.allocate_next() == "127.16.1.0/24"
    with pytest.raises(ValueError, match="out of the range"):
        cidrs.occupy("10.0.0.0/24")
    with pytest.raises(ValueError, match="smaller than the cluster CIDR"):
        CidrSet("127.16.0.0/12", 8)
    with pytest.raises(ValueError, match="max size exceeded"):
        CidrSet("127.0.0.0/8", 30)


def test_flags_and_names() -> None:
    options = parse_args([])
    assert (options.allocate_node_cidrs, options.cluster_cidr, options.node_cidr_mask_size) == \
        (True, "127.16.0.0/12", 24)
    assert enabled_controllers(["nodeipam"]) == ["node-ipam-controller"]
    assert enabled_controllers(["*", "-nodeipam-controller"]).count("node-ipam-controller") == 0
    assert parse_args(["--allocate-node-cidrs=false"]).allocate_node_cidrs is False


def small(cs: Clientset, factory: InformerFactory) -> NodeIpamController:
    return NodeIpamController(cs, factory, cluster_cidr="127.16.0.0/23", node_cidr_mask_size=24)


def cidrs(fake: FakeAPIServer) -> dict[str, tuple[str | None, list[str] | None]]:
    return {n["metadata"]["name"]: (n["spec"].get("podCIDR"), n["spec"].get("podCIDRs"))
            for n in fake.objects(NODES)}


async def test_nodes_get_cidrs_existing_ones_kept_freed_on_delete() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create({"metadata": {"name": "old"}, "spec": {"podCIDR": "127.16.0.0/24",
                                                                 "podCIDRs": ["127.16.0.0/24"]}})
    async with running(small, fake):
        await cs.nodes.create({"metadata": {"name": "new"}, "spec": {}})
        await until(lambda: cidrs(fake)["new"] == ("127.16.1.0/24", ["127.16.1.0/24"]))
        assert cidrs(fake)["old"] == ("127.16.0.0/24", ["127.16.0.0/24"])  # rebuilt before allocating
        await cs.nodes.create({"metadata": {"name": "third"}, "spec": {}})
        await until(lambda: any(e["reason"] == "CIDRNotAvailable" for e in fake.objects(EVENTS)))
        event = next(e for e in fake.objects(EVENTS) if e["reason"] == "CIDRNotAvailable")
        assert event["message"] == "Node third status is now: CIDRNotAvailable"
        assert event["involvedObject"]["kind"] == "Node" and event["source"]["component"] == "cidrAllocator"
        await cs.nodes.delete("old")
        await until(lambda: cidrs(fake)["third"] == ("127.16.0.0/24", ["127.16.0.0/24"]))


async def test_nodes_registered_at_once_each_get_a_distinct_cidr() -> None:
    """Patches run on several workers at once (kube's cidrUpdateWorkers); the allocation stays one per Node."""
    fake = FakeAPIServer()
    cs = Clientset(fake)
    names = [f"n{i}" for i in range(60)]
    for name in names:
        await cs.nodes.create({"metadata": {"name": name}, "spec": {}})
    async with running(lambda c, f: NodeIpamController(c, f, cluster_cidr="127.16.0.0/16",
                                                       node_cidr_mask_size=24), fake):
        await until(lambda: all(podcidr for podcidr, _ in cidrs(fake).values()))
    given = cidrs(fake)
    assert sorted(podcidr for podcidr, _ in given.values()) == sorted(f"127.16.{i}.0/24" for i in range(60))
    assert all(podcidrs == [podcidr] for podcidr, podcidrs in given.values())
