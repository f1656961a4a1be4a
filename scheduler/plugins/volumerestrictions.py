"""VolumeRestrictions (the seed's NoDiskConflict): one disk, one writer per node.

As kube-scheduler's ``isVolumeConflict``: the same GCE PD (``pdName``), ISCSI target (``iqn``) or RBD image
(overlapping ``monitors``, same ``pool`` and ``image``) may be mounted by two pods on a node only if both mount
it read-only; an AWS EBS volume (``volumeID``) may not be shared at all, read-only or not.

Batch form: a pod without a volume of those four sources fits everywhere; otherwise only nodes holding a pod
with volumes (the node table's ``volumes`` column) need the per-node check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import SUCCESS, BatchVerdicts, CycleState, NodeInfo, Pod, Status, unschedulable
from ..nodetable import NodeTable

NAME = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"

Volume = dict[str, Any]


def _both_read_only(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def volumes_conflict(volume: Volume, existing: Volume) -> bool:
    """Do these two pod volumes name the same disk in a way that cannot be shared?"""
    for source, key in (("gcePersistentDisk", "pdName"), ("iscsi", "iqn")):
        a, b = volume.get(source), existing.get(source)
        if a is not None and b is not None and a.get(key) == b.get(key) and not _both_read_only(a, b):
            return True
    a, b = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
    if a is not None and b is not None and a.get("volumeID") == b.get("volumeID"):
        return True
    a, b = volume.get("rbd"), existing.get("rbd")
    if a is not None and b is not None:
        same_image = (set(a.get("monitors") or []) & set(b.get("monitors") or [])
                      and (a.get("pool") or "rbd") == (b.get("pool") or "rbd") and a.get("image") == b.get("image"))
        if same_image and not _both_read_only(a, b):
            return True
    return False


# The volume sources a conflict can involve; a pod with none of them fits everywhere (kube's
# ``needsRestrictionsCheck``). Every pod of a controller has a projected service-account volume, so "has volumes"
# alone sent each such pod through the per-node walk over every placed pod's volumes (a third of the scheduler's
# samples with 2,000 pods on 200 hollow nodes).
DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def restricted_volumes(pod: Pod) -> list[Volume]:
    """The pod's volumes of a source that may conflict."""
    return [v for v in pod.get("spec", {}).get("volumes") or [] if any(s in v for s in DISK_SOURCES)]


def has_disk_conflict(pod: Pod, node: NodeInfo) -> bool:
    volumes = restricted_volumes(pod)
    if not volumes:
        return False
    return any(volumes_conflict(v, e) for v in volumes for other in node.pods.values()
               for e in other.get("spec", {}).get("volumes") or [])


class VolumeRestrictions:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return unschedulable(ERR_REASON_DISK_CONFLICT) if has_disk_conflict(pod, node_info) else SUCCESS

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        if not restricted_volumes(pod):
            return BatchVerdicts(np.ones(table.n, bool))
        with_volumes = table.volumes[:table.n] > 0
        return BatchVerdicts(~with_volumes, undecided=with_volumes)
