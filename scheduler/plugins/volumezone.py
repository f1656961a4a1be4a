"""VolumeZone (``pkg/scheduler/framework/plugins/volumezone``): a pod whose bound volumes live in a zone or
region (their ``topology.kubernetes.io/zone``/``region`` labels, or the beta ``failure-domain`` ones; several
zones joined by ``__``) fits only nodes labelled with one of those values: ``node(s) had no available volume
zone``. A missing or deleted claim is UnschedulableAndUnresolvable here too (``read_claims``, shared with
VolumeBinding); unbound claims are VolumeBinding's concern.

Batch form: a pod without claims fits everywhere; otherwise the per-node path.
"""

from __future__ import annotations

import numpy as np

from apimachinery.volumes import ZONE_LABELS, pod_claim_names

from ..framework import SUCCESS, BatchVerdicts, CycleState, NodeInfo, Pod, Status, VolumeLister, unschedulable
from ..nodetable import NodeTable
from .volumebinding import read_claims

NAME = "VolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

Constraints = list[tuple[str, set[str]]]  # (label, allowed values), one per labelled volume and label


class VolumeZone:
    name = NAME

    def __init__(self) -> None:
        self.volume_lister: VolumeLister | None = None

    def _constraints(self, state: CycleState, pod: Pod) -> tuple[Constraints, Status]:
        if NAME in state:
            return state[NAME]  # type: ignore[no-any-return]
        claims, status = read_claims(self.volume_lister, pod)
        constraints: Constraints = []
        if status.ok and self.volume_lister is not None:
            names = {(c.get("spec") or {}).get("volumeName") for c in claims} - {None, ""}
            for volume in self.volume_lister.volumes() if names else []:
                if volume["metadata"]["name"] not in names:
                    continue
                labels = volume["metadata"].get("labels") or {}
                constraints += [(key, set(str(labels[key]).split("__"))) for key in ZONE_LABELS if key in labels]
        state[NAME] = (constraints, status)
        return constraints, status

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        return self._constraints(state, pod)[1]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        constraints, status = self._constraints(state, pod)
        if not status.ok:
            return status
        for key, allowed in constraints:
            if node_info.labels.get(key) not in allowed:
                return unschedulable(ERR_REASON_CONFLICT, resolvable=False)
        return SUCCESS

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts | None:
        if not pod_claim_names(pod):
            return BatchVerdicts(np.ones(table.n, bool))
        return None
