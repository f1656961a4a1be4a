"""VolumeBinding (``pkg/scheduler/framework/plugins/volumebinding``): a pod's claims must exist and be bindable on
the node.

* PreFilter: every claim the pod names exists and is not being deleted (else UnschedulableAndUnresolvable
  ``persistentvolumeclaim "x" not found`` / ``… is being deleted``); an unbound claim whose class binds
  ``Immediate`` (or that has no class) is the PV binder's to bind first: ``pod has unbound immediate
  PersistentVolumeClaims``;
* Filter, per node: each bound claim's volume admits the node (its node affinity: ``node(s) had volume node
  affinity conflict``); each ``WaitForFirstConsumer`` claim either has an available volume matching it on the
  node (``apimachinery.volumes.find_matching_volume``; two claims never count the same volume) or a class with
  a provisioner whose ``allowedTopologies`` admit the node, else ``node(s) didn't find available persistent
  volumes to bind``; a claim whose provisioning already started on another node (``selected-node``) fits only
  there;
* PreBind: each unbound ``WaitForFirstConsumer`` claim is annotated ``volume.kubernetes.io/selected-node`` with
  the chosen node; the PV binder then binds a static volume there or asks the provisioner (the kubelet of that
  node for ``kubelab.io/local-path``). Unlike kube-scheduler, which waits in PreBind until the claims are bound,
  the pod is bound at once and waits in ContainerCreating on its node (the kubelet's ``claims``).

Batch form: a pod without claims fits everywhere; otherwise the per-node path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apimachinery.nodeaffinity import term_matches
from apimachinery.volumes import (
    ANN_SELECTED_NODE,
    find_matching_volume,
    is_delay_binding,
    node_affinity_matches,
    pod_claim_names,
    storage_class_of,
)
from kubeclient.resources import PERSISTENT_VOLUME_CLAIMS

from ..framework import (
    SUCCESS,
    BatchVerdicts,
    CycleState,
    NodeInfo,
    ObjectPatch,
    Pod,
    Status,
    VolumeLister,
    unschedulable,
)
from ..nodetable import NodeTable

NAME = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

Object = dict[str, Any]


@dataclass
class PodVolumes:
    """What PreFilter found: the pod's bound claims with their volumes, and its claims bound at scheduling."""

    bound: list[tuple[Object, Object | None]] = field(default_factory=list)
    delayed: list[tuple[Object, Object | None]] = field(default_factory=list)  # (claim, its storage class)
    volumes: list[Object] = field(default_factory=list)


def read_claims(lister: VolumeLister | None, pod: Pod) -> tuple[list[Object], Status]:
    """The pod's claims, or the UnschedulableAndUnresolvable status of the first missing or deleted one (shared
    with VolumeZone, as kube's plugins both check)."""
    namespace = pod["metadata"].get("namespace", "default")
    claims: list[Object] = []
    for name in pod_claim_names(pod):
        claim = lister.claim(namespace, name) if lister is not None else None
        if claim is None:
            return [], unschedulable(f'persistentvolumeclaim "{name}" not found', resolvable=False)
        if claim["metadata"].get("deletionTimestamp"):
            return [], unschedulable(f'persistentvolumeclaim "{name}" is being deleted', resolvable=False)
        claims.append(claim)
    return claims, SUCCESS


def _provisionable_on(storage_class: Object | None, node: NodeInfo) -> bool:
    if storage_class is None or not storage_class.get("provisioner") or \
            storage_class["provisioner"] == NO_PROVISIONER:
        return False
    topologies = storage_class.get("allowedTopologies") or []
    if not topologies:
        return True
    terms = [{"matchExpressions": [{"key": e.get("key"), "operator": "In", "values": e.get("values") or []}
                                   for e in t.get("matchLabelExpressions") or []]} for t in topologies]
    return any(term_matches(term, node.labels, node.name) for term in terms)


class VolumeBinding:
    name = NAME

    def __init__(self) -> None:
        self.volume_lister: VolumeLister | None = None

    def _pod_volumes(self, state: CycleState, pod: Pod) -> tuple[PodVolumes | None, Status]:
        if NAME in state:
            return state[NAME]  # type: ignore[no-any-return]
        claims, status = read_claims(self.volume_lister, pod)
        found: tuple[PodVolumes | None, Status] = (None, status)
        if status.ok:
            lister = self.volume_lister
            assert lister is not None or not claims
            volumes = lister.volumes() if lister is not None and claims else []
            by_name = {v["metadata"]["name"]: v for v in volumes}
            result = PodVolumes(volumes=volumes)
            for claim in claims:
                volume_name = (claim.get("spec") or {}).get("volumeName")
                if volume_name:
                    result.bound.append((claim, by_name.get(volume_name)))
                    continue
                storage_class = lister.storage_class(storage_class_of(claim)) if lister is not None else None
                if not is_delay_binding(storage_class):
                    found = (None, unschedulable(ERR_UNBOUND_IMMEDIATE, resolvable=False))
                    break
                result.delayed.append((claim, storage_class))
            else:
                found = (result, SUCCESS)
        state[NAME] = found
        return found

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        return self._pod_volumes(state, pod)[1]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        found, status = self._pod_volumes(state, pod)
        if found is None:
            return status
        for _, volume in found.bound:
            if volume is not None and not node_affinity_matches(volume, node_info.labels, node_info.name):
                return unschedulable(ERR_NODE_CONFLICT, resolvable=False)
        taken: set[str] = set()
        for claim, storage_class in found.delayed:
            selected = (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected and selected != node_info.name:
                return unschedulable(ERR_BIND_CONFLICT, resolvable=False)
            free = [v for v in found.volumes if v["metadata"]["name"] not in taken]
            match = find_matching_volume(claim, free, node_info.node, delay_binding=True)
            if match is not None:
                taken.add(match["metadata"]["name"])
            elif not _provisionable_on(storage_class, node_info):
                return unschedulable(ERR_BIND_CONFLICT, resolvable=False)
        return SUCCESS

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts | None:
        if not pod_claim_names(pod):
            return BatchVerdicts(np.ones(table.n, bool))
        return None

    def pre_bind(self, pod: Pod, node: NodeInfo) -> list[ObjectPatch]:
        claims, status = read_claims(self.volume_lister, pod)
        patches: list[ObjectPatch] = []
        for claim in claims if status.ok else []:
            meta = claim["metadata"]
            if (claim.get("spec") or {}).get("volumeName") or \
                    (meta.get("annotations") or {}).get(ANN_SELECTED_NODE) == node.name:
                continue
            storage_class = self.volume_lister.storage_class(storage_class_of(claim)) if self.volume_lister else None
            if is_delay_binding(storage_class):
                patches.append(ObjectPatch(PERSISTENT_VOLUME_CLAIMS, meta.get("namespace"), meta["name"],
                                           {"metadata": {"annotations": {ANN_SELECTED_NODE: node.name}}}))
        return patches
