"""The scheduling framework: one small Protocol per extension point, a Status with a code, node snapshots.

As in kube-scheduler: Filter plugins say whether a pod fits a node (with the reason a user reads in
``FailedScheduling``), Score plugins rank the feasible nodes 0–100 (``MAX_NODE_SCORE``), weights multiply the
scores, and the highest total wins. Plugins are pure: they read a ``NodeInfo`` and the pod, never the API.

Beside the per-node methods a plugin may opt into the batch forms (``BatchFilterPlugin``, ``BatchScorePlugin``):
the same verdicts and scores for every row of the node table (scheduler/nodetable.py) at once, as arrays. The
runner asks a plugin for its batch form and falls back to per-node calls where it has none (or declines for a
pod); the two must give the same answers, which the unit tests check against per-node runs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from apimachinery.quantity import parse_quantity

if TYPE_CHECKING:
    from .nodetable import NodeTable

MAX_NODE_SCORE = 100
Pod = dict[str, Any]


class Code(enum.Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"  # this node cannot take the pod now
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"  # and preempting would not help


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS = Status()


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    return Status(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


@dataclass
class Resources:
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0

    def add(self, other: Resources) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.pods += other.pods

    def subtract(self, other: Resources) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.pods -= other.pods


def pod_key(pod: Pod) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def pod_priority(pod: Pod) -> int:
    return int(pod.get("spec", {}).get("priority") or 0)


def _quantity(values: dict[str, Any], name: str, milli: bool = False) -> int:
    if name not in values:
        return 0
    q = parse_quantity(values[name])
    return q.milli_value() if milli else q.value()


def resources_of(values: dict[str, Any] | None) -> Resources:
    values = values or {}
    return Resources(_quantity(values, "cpu", milli=True), _quantity(values, "memory"),
                     _quantity(values, "ephemeral-storage"), _quantity(values, "pods"))


def pod_requests(pod: Pod) -> Resources:
    """Requests as kube-scheduler counts them: the sum over containers, or the largest init container if more."""
    spec = pod.get("spec", {})
    total = Resources(pods=1)
    for container in spec.get("containers", []):
        total.add(resources_of((container.get("resources") or {}).get("requests")))
    for init in spec.get("initContainers") or []:
        r = resources_of((init.get("resources") or {}).get("requests"))
        total.milli_cpu = max(total.milli_cpu, r.milli_cpu)
        total.memory = max(total.memory, r.memory)
        total.ephemeral_storage = max(total.ephemeral_storage, r.ephemeral_storage)
    return total


# kube-scheduler's defaults for a container that requests nothing, used only by scores (so that many
# zero-request pods do not all pile onto one node): 0.1 cpu and 200 MiB.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def pod_non_zero_requests(pod: Pod) -> Resources:
    """cpu and memory requests as scores count them: a container without a request counts the defaults."""
    spec = pod.get("spec", {})
    total = Resources(pods=1)

    def non_zero(container: dict[str, Any]) -> Resources:
        requests = (container.get("resources") or {}).get("requests") or {}
        r = resources_of(requests)
        return Resources(r.milli_cpu if "cpu" in requests else DEFAULT_MILLI_CPU_REQUEST,
                         r.memory if "memory" in requests else DEFAULT_MEMORY_REQUEST)

    for container in spec.get("containers", []):
        total.add(non_zero(container))
    for init in spec.get("initContainers") or []:
        r = non_zero(init)
        total.milli_cpu = max(total.milli_cpu, r.milli_cpu)
        total.memory = max(total.memory, r.memory)
    return total


@dataclass
class NodeInfo:
    """A node and what is already placed on it (bound and assumed pods)."""

    node: dict[str, Any]
    pods: dict[str, Pod] = field(default_factory=dict)  # by pod key
    requested: Resources = field(default_factory=Resources)
    non_zero_requested: Resources = field(default_factory=Resources)  # for scores (see pod_non_zero_requests)
    used_ports: set[tuple[str, str, int]] = field(default_factory=set)  # (hostIP, protocol, hostPort)

    @property
    def name(self) -> str:
        name: str = self.node["metadata"]["name"]
        return name

    @property
    def labels(self) -> dict[str, str]:
        return self.node["metadata"].get("labels") or {}

    @property
    def allocatable(self) -> Resources:
        return resources_of(self.node.get("status", {}).get("allocatable"))

    def add_pod(self, key: str, pod: Pod) -> None:
        if key in self.pods:
            self.remove_pod(key)
        self.pods[key] = pod
        self.requested.add(pod_requests(pod))
        self.non_zero_requested.add(pod_non_zero_requests(pod))
        self.used_ports |= host_ports(pod)

    def clone(self) -> NodeInfo:
        """A copy whose pods and sums can change without touching this one (kube-scheduler's ``Snapshot``)."""
        return NodeInfo(self.node, dict(self.pods), replace(self.requested), replace(self.non_zero_requested),
                        set(self.used_ports))

    def remove_pod(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.requested.subtract(pod_requests(pod))
        self.non_zero_requested.subtract(pod_non_zero_requests(pod))
        self.used_ports = set().union(*(host_ports(p) for p in self.pods.values())) if self.pods else set()


def host_ports(pod: Pod) -> set[tuple[str, str, int]]:
    ports = set()
    for container in pod.get("spec", {}).get("containers", []):
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ports.add((port.get("hostIP") or "0.0.0.0", port.get("protocol", "TCP"), int(port["hostPort"])))
    return ports


class CycleState(dict[str, Any]):
    """Scratch space for one scheduling attempt of one pod, shared by its plugins.

    The runner makes a fresh one per attempt, ``CycleState(all_nodes)``; PreFilter/PreScore write what they
    computed once (keyed by their plugin name) so Filter/Score, called per node, only read it. A plugin must cope
    with a missing entry (compute it then), so a runner that skips an optional extension point stays correct,
    only slower.

    ``snapshot`` is every node of this attempt (kube-scheduler's SnapshotSharedLister): PreScore sees only the
    feasible nodes, yet InterPodAffinity, PodTopologySpread and ImageLocality count pods and images cluster-wide.
    Left empty, those plugins fall back to the nodes they are handed.
    """

    def __init__(self, snapshot: Iterable[NodeInfo] = ()) -> None:
        super().__init__()
        self.snapshot: list[NodeInfo] = list(snapshot)

    def all_nodes(self, fallback: list[NodeInfo]) -> list[NodeInfo]:
        return self.snapshot or fallback


NamespaceLabels = Callable[[str], Mapping[str, str]]


def builtin_namespace_labels(namespace: str) -> Mapping[str, str]:
    """The one label every namespace carries; what plugins see without a namespace informer."""
    return {"kubernetes.io/metadata.name": namespace}


class PodNominator(Protocol):
    """Pending pods nominated to nodes (``status.nominatedNodeName``), as the scheduling queue keeps them."""

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def nodes(self) -> list[str]:
        """The nodes that have nominated pods."""
        ...


class VolumeLister(Protocol):
    """The claims, volumes and storage classes the volume plugins read (the scheduler's informers)."""

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def volumes(self) -> list[dict[str, Any]]: ...

    def storage_class(self, name: str) -> dict[str, Any] | None: ...


@dataclass
class Handle:
    """What the runner and plugins get from the scheduler beyond the pod and the nodes (kube-scheduler's
    ``framework.Handle``): namespace labels from the namespace informer, the queue's nominator, which the runner
    needs to keep room for nominated pods (``Runner.filter_with_nominated_pods``), and the storage listers."""

    namespace_labels: NamespaceLabels = builtin_namespace_labels
    nominator: PodNominator | None = None
    volume_lister: VolumeLister | None = None


@runtime_checkable
class VolumeAware(Protocol):
    """Optional: a plugin that reads claims and volumes exposes ``volume_lister``; the runner sets it to the
    Handle's (None: no storage informers, every claim is treated as missing)."""

    volume_lister: VolumeLister | None


@dataclass(frozen=True)
class ObjectPatch:
    """A merge patch a PreBind plugin asks the scheduler to write before it binds the pod (kube's PreBind plugins
    write themselves; ours stay pure and hand the write back)."""

    resource: Any  # a kubeclient Resource
    namespace: str | None
    name: str
    patch: dict[str, Any]


@runtime_checkable
class PreBindPlugin(Protocol):
    """PreBind (optional): the writes to make once ``node`` is chosen and before the pod is bound to it."""

    name: str

    def pre_bind(self, pod: Pod, node: NodeInfo) -> list[ObjectPatch]: ...


@runtime_checkable
class NamespaceAware(Protocol):
    """Optional: a plugin that matches namespace labels (a ``namespaceSelector``) exposes ``namespace_labels``;
    the runner sets it to the Handle's lookup."""

    namespace_labels: NamespaceLabels


@runtime_checkable
class PreFilterPlugin(Protocol):
    """PreFilter (optional): called once per attempt, before any Filter, with every node. A non-success Status
    rejects the pod for every node (its reasons go to each node)."""

    name: str

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status: ...


class FilterPlugin(Protocol):
    """Filter: can ``pod`` run on this node? A non-success Status carries the reason shown to users."""

    name: str

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """PreScore (optional): called once per attempt with the feasible nodes, before any Score."""

    name: str

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> None: ...


class ScorePlugin(Protocol):
    """Score: how good is this node for ``pod``. Without ``normalize`` the score must already be
    0..MAX_NODE_SCORE; with it, raw scores may be any int and ``normalize`` maps them to 0..MAX_NODE_SCORE."""

    name: str

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int: ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    """ScoreExtensions.NormalizeScore (optional): raw scores of all scored nodes (by node name) → 0..100."""

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]: ...


@dataclass
class Candidate:
    """A node and the pods to delete from it so the pod fits there (preemption's victims)."""

    node: str
    victims: list[Pod]


@dataclass
class PostFilterResult:
    candidate: Candidate | None
    message: str = ""  # why there is none, appended to FailedScheduling ("preemption: ...")
    clear_nomination: bool = False  # without a candidate: drop the pod's nominatedNodeName (else leave it)

    @property
    def nominated_node(self) -> str | None:
        """kube-scheduler's NominatingInfo: the node to nominate, "" to clear the nomination, None to leave it."""
        if self.candidate is not None:
            return self.candidate.node
        return "" if self.clear_nomination else None


FitsOn = Callable[[NodeInfo], Callable[[NodeInfo], Status]]


class PostFilterPlugin(Protocol):
    """PostFilter: called only when no node fits, with the failed filters' Status by node name. It may find a way
    for the pod to fit later (DefaultPreemption: victims to delete) and names the node to nominate. ``fits_on(node)``
    gives a check that runs the profile's filters, with the node's nominated pods, on a modified copy of ``node``."""

    name: str

    def post_filter(self, pod: Pod, nodes: list[NodeInfo], statuses: dict[str, Status], fits_on: FitsOn
                    ) -> PostFilterResult: ...


@runtime_checkable
class AssignedPodAddHint(Protocol):
    """Optional (kube-scheduler's QueueingHintFn for the AssignedPodAdd event): could ``added``, just bound to a
    node, make ``pending`` schedulable? A parked pod is retried on a pod add only if a plugin of its profile says
    it could."""

    def assigned_pod_add_may_help(self, pending: Pod, added: Pod) -> bool: ...


_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def implements(plugin: Any, protocol: type) -> bool:
    """``isinstance(plugin, protocol)`` for a runtime-checkable extension point, remembered per plugin class (the
    check walks the protocol's members, too slow to repeat for every plugin of every attempt)."""
    key = (type(plugin), protocol)
    found = _IMPLEMENTS.get(key)
    if found is None:
        found = _IMPLEMENTS[key] = isinstance(plugin, protocol)
    return found


@dataclass
class BatchVerdicts:
    """A Filter's verdicts for every row of the node table: ``passed`` per row, the rejected rows' Status in
    ``statuses`` (a mapping that may be shared with a cache or computed from codes: never mutated by the runner),
    and the rows only the per-node ``filter`` can decide (``undecided``, after the plugin's ``pre_filter``)."""

    passed: np.ndarray
    statuses: Mapping[int, Status] = field(default_factory=dict)
    undecided: np.ndarray | None = None


@runtime_checkable
class BatchFilterPlugin(Protocol):
    """Optional, beside ``filter``: the verdicts on every row of ``table`` at once, equal to per-node ``filter``
    calls after ``pre_filter`` on every node; None: this pod goes through the per-node path."""

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts | None: ...


@runtime_checkable
class BatchScorePlugin(Protocol):
    """Optional, beside ``score``: (raw, normalized) scores of ``rows`` (the feasible nodes), equal to
    ``pre_score`` over those nodes, ``score`` per node and ``normalize``; None: the per-node path."""

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None: ...


class CodedStatuses(Mapping[int, Status]):
    """Rows → Status read from an array of codes (0: passed) and one Status per code, so an attempt builds no
    dict of thousands of rows; only failing rows are keys."""

    def __init__(self, codes: np.ndarray, statuses: tuple[Status | None, ...]) -> None:
        self.codes = codes
        self.statuses = statuses

    def __getitem__(self, row: int) -> Status:
        status = self.statuses[int(self.codes[row])] if 0 <= row < len(self.codes) else None
        if status is None:
            raise KeyError(row)
        return status

    def __iter__(self) -> Iterator[int]:
        return iter(np.flatnonzero(self.codes).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self.codes))


def default_normalize_score(scores: dict[str, int], reverse: bool = False) -> dict[str, int]:
    """Scale scores so the highest is MAX_NODE_SCORE (reverse: the lowest raw score becomes the best)."""
    top = max(scores.values(), default=0)
    if top == 0:
        return {n: MAX_NODE_SCORE if reverse else 0 for n in scores}
    out = {n: s * MAX_NODE_SCORE // top for n, s in scores.items()}
    return {n: MAX_NODE_SCORE - s for n, s in out.items()} if reverse else out


def default_normalize(raw: np.ndarray, reverse: bool = False) -> np.ndarray:
    """``default_normalize_score`` over an array of raw scores."""
    top = int(raw.max()) if len(raw) else 0
    if top == 0:
        return np.full(len(raw), MAX_NODE_SCORE if reverse else 0, np.int64)
    out = raw * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out
