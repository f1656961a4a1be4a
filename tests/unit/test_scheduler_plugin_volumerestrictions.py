"""VolumeRestrictions (the seed's NoDiskConflict): a disk is mounted on a node by one writer."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import CycleState, NodeInfo
from scheduler.nodetable import NodeTable
from scheduler.plugins.volumerestrictions import ERR_REASON_DISK_CONFLICT, VolumeRestrictions, volumes_conflict
from support.builders import make_node, make_pod


def gce(name: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "gcePersistentDisk": {"pdName": name, "readOnly": read_only}}


def ebs(volume_id: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}}


def rbd(monitors: list[str], image: str, pool: str | None = None, read_only: bool = False) -> dict[str, Any]:
    source: dict[str, Any] = {"monitors": monitors, "image": image, "readOnly": read_only}
    if pool:
        source["pool"] = pool
    return {"name": "v", "rbd": source}


@pytest.mark.parametrize("volume,existing,conflict", [
    (gce("disk1"), gce("disk1"), True),
    (gce("disk1", True), gce("disk1"), True),
    (gce("disk1", True), gce("disk1", True), False),  # both read-only: shared
    (gce("disk1"), gce("disk2"), False),
    (ebs("vol-1"), ebs("vol-1"), True),
    (ebs("vol-1", True), ebs("vol-1", True), True),  # EBS attaches to one pod, read-only or not
    (ebs("vol-1"), ebs("vol-2"), False),
    (iscsi("iqn.a"), iscsi("iqn.a"), True),
    (iscsi("iqn.a", True), iscsi("iqn.a", True), False),
    (iscsi("iqn.a"), iscsi("iqn.b"), False),
    (rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img"), True),  # overlapping monitors, same pool (rbd) and image
    (rbd(["m1"], "img"), rbd(["m1"], "img", pool="rbd"), True),  # the pool defaults to "rbd"
    (rbd(["m1"], "img"), rbd(["m9"], "img"), False),
    (rbd(["m1"], "img", pool="a"), rbd(["m1"], "img", pool="b"), False),
    (rbd(["m1"], "img", read_only=True), rbd(["m1"], "img", read_only=True), False),
    (gce("disk1"), ebs("disk1"), False),  # different kinds of disk never clash
    ({"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}, False),
])
def test_volumes_conflict(volume: dict[str, Any], existing: dict[str, Any], conflict: bool) -> None:
    assert volumes_conflict(volume, existing) is conflict


def test_filter_checks_every_pod_on_the_node() -> None:
    node = NodeInfo(make_node("node01"))
    for i, volume in enumerate((gce("other"), gce("disk1", True))):
        occupant = make_pod(f"o{i}").namespace("d").build()
        occupant["spec"]["volumes"] = [volume]
        node.add_pod(f"d/o{i}", occupant)
    incoming = make_pod("p").namespace("d").build()
    plugin = VolumeRestrictions()
    assert plugin.filter(CycleState(), incoming, node).ok  # no volumes at all
    incoming["spec"]["volumes"] = [{"name": "cache", "emptyDir": {}}, gce("disk1", True)]
    assert plugin.filter(CycleState(), incoming, node).ok
    incoming["spec"]["volumes"] = [gce("disk1")]
    assert plugin.filter(CycleState(), incoming, node).reasons == (ERR_REASON_DISK_CONFLICT,)
    assert plugin.filter(CycleState(), incoming, NodeInfo(make_node("node02"))).ok


def test_pods_with_only_other_volumes_fit_every_node_without_a_walk() -> None:
    """A controller's pods carry a projected service-account volume: no source that can conflict, so the batch
    form passes every node (none left undecided), as kube's PreFilter skips them."""
    node = NodeInfo(make_node("node01"))
    occupant = make_pod("o").namespace("d").build()
    occupant["spec"]["volumes"] = [gce("disk1")]
    node.add_pod("d/o", occupant)
    incoming = make_pod("p").namespace("d").build()
    incoming["spec"]["volumes"] = [{"name": "kube-api-access-x", "projected": {"sources": []}},
                                   {"name": "cache", "emptyDir": {}}]
    plugin = VolumeRestrictions()
    assert plugin.filter(CycleState(), incoming, node).ok
    table = NodeTable()
    table.upsert(node)
    verdicts = plugin.batch_filter(CycleState(), incoming, table)
    assert verdicts.passed.all() and verdicts.undecided is None
    incoming["spec"]["volumes"].append(gce("disk1"))  # now it may conflict
    assert plugin.filter(CycleState(), incoming, node).reasons == (ERR_REASON_DISK_CONFLICT,)
