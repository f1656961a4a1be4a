"""The framework runner (a profile's filter → score over the node table) and the scheduling loop.

Runner, as kube-scheduler's ``schedulePod``: PreFilter, then Filter over nodes from a rotating start index until
``percentageOfNodesToScore`` feasible nodes are found (kube-scheduler's adaptive default), PreScore and Score the
feasible ones, weights × normalised scores, the highest total wins, ties at random. Speed (see nodetable.py):
NodeResourcesFit, LeastAllocated and BalancedAllocation run as array maths over all nodes; plugins that read only
a node's labels/taints/name declare it (``filter_view``/``score_view``: NodeName, NodeUnschedulable,
TaintToleration, NodeAffinity) and are answered from a per-pod-view cache, normalised by their own
``normalize``; plugins that have nothing to say about a pod (no host ports, no volumes, no spread
constraints, no pod affinity anywhere) are skipped. Only the nodes left undecided go through per-node plugin
calls. Nodes with nominated pods (a preemptor waiting for its victims to go) are filtered per node with those
pods first (``filter_with_nominated_pods``), so a less important pod cannot take the room made for them.
A pod that carries ``status.nominatedNodeName`` is first tried on that node alone (PreferNominatedNode): if it
fits there it goes there, without filtering or scoring the others. ``find_node_reference`` is the plain per-node
runner; a unit test checks both agree.

Loop: informers feed the cache (nodes, bound pods) and the queue (pending pods of our profiles); the loop pops
a pod, runs its profile, assumes the pod on the chosen node and binds it asynchronously. A failed bind (or a
plugin error) forgets the assumption, clears the pod's nomination, writes PodScheduled=False (SchedulerError) and
requeues the pod with backoff unless it is gone or bound meanwhile. When nothing fits, the profile's PostFilter,
DefaultPreemption (plugins/defaultpreemption.py), looks for lower-priority victims: if found they are deleted and
the pod nominated to their node (in the queue's nominator at once, in ``status.nominatedNodeName`` after; without
victims anywhere an earlier nomination is cleared); either way the pod gets
``PodScheduled=False`` (reason Unschedulable) and a ``FailedScheduling`` event in Kubernetes' words (with the
preemption note unless preemption is disabled), and waits for a cluster event (the victims' deletion is one).
A namespace informer gives InterPodAffinity the namespace labels its ``namespaceSelector``s match.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from apimachinery import errors
from apimachinery.meta import now_rfc3339
from kubeclient import Clientset
from kubeclient.events import EventRecorder
from kubeclient.informer import SharedInformer, wait_for_cache_sync

from . import affinityindex
from .cache import Cache, is_terminated
from .config import Profile
from .diagnosis import Attempt, DiagnosisStore, ScoreColumn, failure_message
from .framework import (SUCCESS, Candidate, CycleState, Handle, NamespaceLabels, NodeInfo, Pod, PostFilterResult,
                        Status, pod_non_zero_requests, pod_priority, pod_requests)
from .nodetable import (NodeTable, balanced_allocation, default_normalize, fit_reasons, least_allocated,
                        shape_key)
from .nominator import nominated_node_name
from .plugins import REGISTRY, interpodaffinity, podtopologyspread
from .queue import QueuedPodInfo, SchedulingQueue, pod_key

__all__ = ["Scheduler", "Runner", "failure_message", "num_feasible_nodes_to_find", "pod_key"]

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
MAX_BINDS_IN_FLIGHT = 64


def num_feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind``: all of a small cluster, else a share (adaptive if 0)."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


# --- what the vectorised path knows about in-tree plugins -------------------------------------------------------

def _spec(pod: Pod) -> dict[str, Any]:
    return pod.get("spec", {})


def _has_host_ports(pod: Pod) -> bool:
    return any(p.get("hostPort") for c in _spec(pod).get("containers", []) for p in c.get("ports") or [])


def _has_hard_spread(pod: Pod) -> bool:
    return any(c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
               for c in _spec(pod).get("topologySpreadConstraints") or [])


def _pod_affinity_terms(pod: Pod, kind: str, when: str) -> list[Any]:
    return ((_spec(pod).get("affinity") or {}).get(kind) or {}).get(when) or []


def _has_controller(pod: Pod) -> bool:
    return any(ref.get("controller") for ref in pod.get("metadata", {}).get("ownerReferences") or [])


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _pod_add_may_help(pending: Pod, added: Pod, namespace_labels: NamespaceLabels) -> bool:
    """AssignedPodAdd's queueing hints: InterPodAffinity's and PodTopologySpread's (the plugins it can help)."""
    return interpodaffinity.assigned_pod_add_may_help(pending, added, namespace_labels) or \
        podtopologyspread.assigned_pod_add_may_help(pending, added)


def _plugin_id(plugin: Any) -> tuple[str, str, str]:
    return type(plugin).__module__, type(plugin).__qualname__, plugin.name


class Runner:
    """Runs one profile's plugins for a pod over the cache's nodes; see the module docstring."""

    def __init__(self, profile: Profile, handle: Handle | None = None) -> None:
        self.profile = profile
        self.handle = handle or Handle()
        self.filters = [REGISTRY[name]() for name in profile.filters]
        by_name = {p.name: p for p in self.filters}  # a plugin in both lists is one instance (shared state)
        self.scores = [(by_name.get(name) or REGISTRY[name](), weight) for name, weight in profile.scores]
        self.post_filters = [REGISTRY[name]() for name in profile.post_filters]
        for plugin in (*self.filters, *(p for p, _ in self.scores)):
            if hasattr(plugin, "namespace_labels"):  # NamespaceAware
                plugin.namespace_labels = self.handle.namespace_labels
        self.next_start = 0

    def _in_tree(self, plugin: Any, name: str) -> bool:
        return plugin.name == name and type(plugin) is REGISTRY.get(name)

    # --- filter forms: (passed, undecided) over all rows, or None (every row per node) ----------------------
    def _filter_form(self, plugin: Any, pod: Pod, table: NodeTable, state: CycleState, attempt: Attempt, k: int
                     ) -> tuple[np.ndarray, np.ndarray | None] | None:
        n = table.n
        if hasattr(plugin, "filter_view"):  # NodeStaticFilter: cached per pod view and node
            entry = table.shapes.filter((_plugin_id(plugin), "filter", shape_key(plugin.filter_view(pod))),
                                        lambda info: plugin.filter(state, pod, info))
            attempt.statuses[k] = entry.statuses
            return entry.ok[:n], None
        if self._in_tree(plugin, "NodeResourcesFit"):
            bits = fit_reasons(table, pod_requests(pod))
            attempt.fit_index, attempt.fit_bits = k, bits
            return bits == 0, None
        everywhere = np.ones(n, bool)
        if self._in_tree(plugin, "NodePorts"):
            return (everywhere, None) if not _has_host_ports(pod) else (~table.ports[:n], table.ports[:n])
        if self._in_tree(plugin, "VolumeRestrictions"):
            if not _spec(pod).get("volumes"):
                return everywhere, None
            with_volumes = table.counts[:n, 0] > 0
            return ~with_volumes, with_volumes
        if self._in_tree(plugin, "PodTopologySpread") and not _has_hard_spread(pod):
            return everywhere, None
        if self._in_tree(plugin, "InterPodAffinity"):
            if not _pod_affinity_terms(pod, "podAffinity", REQUIRED) and \
                    not _pod_affinity_terms(pod, "podAntiAffinity", REQUIRED) and not table.counts[:n, 1].any():
                return everywhere, None
            codes = affinityindex.filter_codes(table.affinity, n, pod, plugin.namespace_labels)
            attempt.statuses[k] = affinityindex.CodedStatuses(codes)
            return codes == affinityindex.OK, None
        return None

    # --- score forms: (raw, normalized) for the feasible rows, or None (per node) --------------------------
    def _score_form(self, plugin: Any, pod: Pod, table: NodeTable, state: CycleState, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        if self._in_tree(plugin, "NodeResourcesFit"):
            raw = least_allocated(table, rows, pod_non_zero_requests(pod))
            return raw, raw
        if self._in_tree(plugin, "NodeResourcesBalancedAllocation"):
            raw = balanced_allocation(table, rows, pod_non_zero_requests(pod))
            return raw, raw
        if hasattr(plugin, "score_view"):  # NodeStaticScore: raw scores cached per pod view and node
            entry = table.shapes.score((_plugin_id(plugin), "score", shape_key(plugin.score_view(pod))),
                                       lambda info: plugin.score(state, pod, info))
            raw = entry.raw[rows]
            return raw, self._normalize(plugin, pod, table, state, rows, raw)
        zeros = np.zeros(len(rows), np.int64)
        if self._in_tree(plugin, "PodTopologySpread") and not _spec(pod).get("topologySpreadConstraints") \
                and not _has_controller(pod):
            return zeros, zeros
        if self._in_tree(plugin, "InterPodAffinity"):
            if not _pod_affinity_terms(pod, "podAffinity", PREFERRED) and \
                    not _pod_affinity_terms(pod, "podAntiAffinity", PREFERRED) and not table.counts[:table.n, 2].any():
                return zeros, zeros
            raw = affinityindex.raw_scores(table.affinity, table.n, pod, plugin.namespace_labels)[rows]
            return raw, affinityindex.normalize(raw)
        if self._in_tree(plugin, "ImageLocality") and not table.images[rows].any():
            return zeros, zeros
        return None

    def _normalize(self, plugin: Any, pod: Pod, table: NodeTable, state: CycleState, rows: np.ndarray,
                   raw: np.ndarray) -> np.ndarray:
        """The plugin's own normalisation of ``raw`` (feasible ``rows``): as an array when it declares it is the
        default one (DefaultNormalize), else through its ``normalize``."""
        if hasattr(plugin, "normalize_reverse"):
            return default_normalize(raw, plugin.normalize_reverse)
        if not hasattr(plugin, "normalize"):
            return raw
        names = [table.names[r] for r in rows.tolist()]
        normalized = plugin.normalize(state, pod, dict(zip(names, raw.tolist())))
        return np.array([normalized[name] for name in names], np.int64)

    # --- nominated pods -----------------------------------------------------------------------------------------
    def _with_nominated_pods(self, pod: Pod, info: NodeInfo, infos: list[NodeInfo]
                             ) -> tuple[CycleState, NodeInfo] | None:
        """kube-scheduler's ``addNominatedPods``: a copy of ``info`` with the pods nominated to it that have at
        least ``pod``'s priority (not ``pod`` itself), and a CycleState whose snapshot holds that copy (PreFilters
        then run on it lazily); None when there are none."""
        nominator = self.handle.nominator
        if nominator is None:
            return None
        key, priority = pod_key(pod), pod_priority(pod)
        added = [p for p in nominator.nominated_pods_for_node(info.name)
                 if pod_priority(p) >= priority and pod_key(p) != key]
        if not added:
            return None
        copy = info.clone()
        for p in added:
            copy.add_pod(pod_key(p), p)
        return CycleState(copy if i is info else i for i in infos), copy

    def _run_filters(self, state: CycleState, pod: Pod, info: NodeInfo) -> tuple[int, Status] | None:
        """The first filter that rejects ``info`` (its index and Status), or None."""
        for k, plugin in enumerate(self.filters):
            status = plugin.filter(state, pod, info)
            if not status.ok:
                return k, status
        return None

    def filter_with_nominated_pods(self, state: CycleState, pod: Pod, info: NodeInfo, infos: list[NodeInfo]
                                   ) -> tuple[int, Status] | None:
        """kube-scheduler's ``RunFilterPluginsWithNominatedPods``: the filters run first with the node's nominated
        pods of equal or higher priority added (the pod must not take the room kept for them), then, if that passes
        and pods were added, without them (pod affinity may rely on pods that are not there yet). The node fits only
        if both pass; the first failure is returned."""
        nominated = self._with_nominated_pods(pod, info, infos)
        if nominated is not None:
            failed = self._run_filters(nominated[0], pod, nominated[1])
            if failed is not None:
                return failed
        return self._run_filters(state, pod, info)

    def _evaluate_nominated_node(self, pod: Pod, table: NodeTable, attempt: Attempt) -> Attempt | None:
        """kube-scheduler's ``evaluateNominatedNode`` (PreferNominatedNode, GA): a pod whose
        ``status.nominatedNodeName`` names a known node (set by its preemption) is filtered against that node alone,
        after the PreFilters and with the node's nominated pods (``filter_with_nominated_pods``). If it fits, that
        node is the attempt's answer: no other node is filtered or scored and the start index does not move. None
        (unknown node, a PreFilter or a Filter rejects): the normal search decides, and reports its own verdicts."""
        row = table.index.get(nominated_node_name(pod))
        if row is None:
            return None
        state = CycleState(table.infos)
        for plugin in self.filters:
            if hasattr(plugin, "pre_filter") and not plugin.pre_filter(state, pod, table.infos).ok:
                return None
        if self.filter_with_nominated_pods(state, pod, table.infos[row], table.infos) is not None:
            return None
        attempt.evaluated = attempt.feasible = np.array([row], np.int64)
        return self._finish(attempt, pod, table, state)

    # --- the attempt --------------------------------------------------------------------------------------------
    def _new_attempt(self, pod: Pod, table: NodeTable, number: int) -> Attempt:
        n = len(self.filters)
        return Attempt(pod_key(pod), number, now_rfc3339(), table.names, [p.name for p in self.filters],
                       np.zeros(0, np.int64), np.full(table.n, n, np.int16), [{} for _ in range(n)])

    def find_node(self, pod: Pod, cache: Cache, number: int = 1) -> Attempt:
        """The vectorised attempt: filters over all rows at once, per-node calls only where undecided."""
        table = cache.table
        n, k_all = table.n, len(self.filters)
        attempt = self._new_attempt(pod, table, number)
        if n == 0:
            return self._finish(attempt, pod, table, None)
        if (preferred := self._evaluate_nominated_node(pod, table, attempt)) is not None:
            return preferred
        state = CycleState(table.infos)
        fail_at = attempt.fail_at
        needs_call = np.zeros(n, bool)
        undecided: list[np.ndarray | None] = []
        for k, plugin in enumerate(self.filters):
            form = self._filter_form(plugin, pod, table, state, attempt, k)
            if form is None:
                passed, unknown = np.zeros(n, bool), np.ones(n, bool)
            else:
                passed, unknown = form
            clean = fail_at == k_all
            if unknown is not None:
                needs_call |= unknown & clean
                failed = ~passed & ~unknown
            else:
                failed = ~passed
            fail_at[failed & clean] = k
            undecided.append(unknown)
            if unknown is not None and unknown.any() and hasattr(plugin, "pre_filter"):
                status = plugin.pre_filter(state, pod, table.infos)
                if not status.ok:
                    attempt.pre_filter = (plugin.name, status)
                    attempt.evaluated = np.arange(n)
                    return self._finish(attempt, pod, table, None)

        # Nodes with nominated pods are checked per node with them first (filter_with_nominated_pods); the
        # arrays above are the second pass, without them.
        nominated: dict[int, tuple[CycleState, NodeInfo]] = {}
        for name in self.handle.nominator.nodes() if self.handle.nominator is not None else ():
            row = table.index.get(name)
            found = None if row is None else self._with_nominated_pods(pod, table.infos[row], table.infos)
            if row is not None and found is not None:
                nominated[row] = found
                needs_call[row] = True

        def resolve(row: int) -> bool:
            """Run the undecided filters of ``row`` in order, up to its first failure; True if it passes all."""
            info = table.infos[row]
            if row in nominated:
                failed = self._run_filters(nominated[row][0], pod, nominated[row][1])
                if failed is not None:
                    attempt.override_status(failed[0], row, failed[1])
                    return False
            for k, plugin in enumerate(self.filters):
                if k == fail_at[row]:
                    return False
                unknown = undecided[k]
                if unknown is None or not unknown[row]:
                    continue
                status = plugin.filter(state, pod, info)
                if not status.ok:
                    fail_at[row] = k
                    attempt.statuses[k][row] = status
                    return False
            fail_at[row] = k_all
            return True

        decided = (fail_at == k_all) & ~needs_call
        return self._search(attempt, pod, table, state, decided, needs_call, resolve)

    def _search(self, attempt: Attempt, pod: Pod, table: NodeTable, state: CycleState, decided: np.ndarray,
                uncertain: np.ndarray, resolve: Callable[[int], bool]) -> Attempt:
        """Walk rows from the rotating start until enough feasible nodes are found (as kube-scheduler)."""
        n = table.n
        want = num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, n)
        start = self.next_start % n
        order = np.roll(np.arange(n), -start)
        counts = np.cumsum(decided[order])
        extra, processed = 0, n
        feasible_uncertain: list[int] = []
        for pos in np.flatnonzero(uncertain[order]).tolist():
            if counts[pos] + extra >= want:
                processed = int(np.searchsorted(counts, want - extra)) + 1
                break
            if resolve(int(order[pos])):
                extra += 1
                feasible_uncertain.append(pos)
                if counts[pos] + extra >= want:
                    processed = pos + 1
                    break
        else:
            if counts[-1] + extra >= want:
                processed = int(np.searchsorted(counts, want - extra)) + 1
        self.next_start = (start + processed) % n
        walked = order[:processed]
        attempt.evaluated = walked
        feasible_mask = decided[walked].copy()
        feasible_mask[[p for p in feasible_uncertain if p < processed]] = True
        attempt.feasible = walked[feasible_mask]
        return self._finish(attempt, pod, table, state)

    def _finish(self, attempt: Attempt, pod: Pod, table: NodeTable, state: CycleState | None) -> Attempt:
        rows = attempt.feasible
        if len(rows) == 0:
            attempt.result = "Unschedulable"
            attempt.message = attempt.failure_message(table.n)
            return attempt
        attempt.result = "Scheduled"
        if len(rows) == 1:  # as kube-scheduler: one feasible node needs no scoring
            attempt.node = table.names[int(rows[0])]
            return attempt
        assert state is not None
        per_node: list[tuple[int, Any, int]] = []
        columns: list[ScoreColumn | None] = []
        for i, (plugin, weight) in enumerate(self.scores):
            form = self._score_form(plugin, pod, table, state, rows)
            if form is None:
                per_node.append((i, plugin, weight))
                columns.append(None)
            else:
                columns.append(ScoreColumn(plugin.name, weight, form[0], form[1]))
        if per_node:
            infos = [table.infos[r] for r in rows.tolist()]
            for _, plugin, _ in per_node:
                if hasattr(plugin, "pre_score"):
                    plugin.pre_score(state, pod, infos)
            for i, plugin, weight in per_node:
                raw = {info.name: plugin.score(state, pod, info) for info in infos}
                normalized = plugin.normalize(state, pod, raw) if hasattr(plugin, "normalize") else raw
                columns[i] = ScoreColumn(plugin.name, weight, np.array([raw[x.name] for x in infos], np.int64),
                                         np.array([normalized[x.name] for x in infos], np.int64))
        attempt.scores = [c for c in columns if c is not None]
        return self._pick(attempt, table)

    def _pick(self, attempt: Attempt, table: NodeTable) -> Attempt:
        totals = np.zeros(len(attempt.feasible), np.int64)
        for column in attempt.scores:
            totals += column.normalized * column.weight
        attempt.totals = totals
        best = np.flatnonzero(totals == totals.max())
        attempt.node = table.names[int(attempt.feasible[random.choice(best.tolist())])]
        return attempt

    def post_filter(self, pod: Pod, cache: Cache, attempt: Attempt) -> PostFilterResult | None:
        """The profile's PostFilter plugins (DefaultPreemption) after a failed ``attempt``, as kube-scheduler's
        ``RunPostFilterPlugins``: the first that finds a candidate wins; otherwise their messages are joined and
        the last one that decided about the nomination decides. None when the profile has no PostFilter."""
        if not self.post_filters:
            return None
        table = cache.table
        verdicts = {}
        for row in attempt.evaluated.tolist():
            failed = attempt.status_of(row)
            if failed is not None:
                verdicts[table.names[row]] = failed[1]
        infos = list(table.infos)

        def fits_on(original: NodeInfo) -> Callable[[NodeInfo], Status]:
            def fits(trial: NodeInfo) -> Status:
                trial_infos = [trial if info is original else info for info in infos]
                failed = self.filter_with_nominated_pods(CycleState(trial_infos), pod, trial, trial_infos)
                return SUCCESS if failed is None else failed[1]  # PreFilters run lazily on the trial snapshot
            return fits

        messages, clear = [], False
        for plugin in self.post_filters:
            result = plugin.post_filter(pod, infos, verdicts, fits_on)
            if result.candidate is not None:
                return result
            if result.message:
                messages.append(result.message)
            if result.nominated_node is not None:
                clear = result.clear_nomination
        return PostFilterResult(None, ", ".join(messages), clear_nomination=clear)

    def find_node_reference(self, pod: Pod, cache: Cache, number: int = 1) -> Attempt:
        """The same attempt with every plugin called per node (the oracle the vectorised path must equal)."""
        table = cache.table
        n, k_all = table.n, len(self.filters)
        attempt = self._new_attempt(pod, table, number)
        if n == 0:
            return self._finish(attempt, pod, table, None)
        if (preferred := self._evaluate_nominated_node(pod, table, attempt)) is not None:
            return preferred
        state = CycleState(table.infos)
        for plugin in self.filters:
            if hasattr(plugin, "pre_filter"):
                status = plugin.pre_filter(state, pod, table.infos)
                if not status.ok:
                    attempt.pre_filter = (plugin.name, status)
                    attempt.evaluated = np.arange(n)
                    return self._finish(attempt, pod, table, None)

        def resolve(row: int) -> bool:
            failed = self.filter_with_nominated_pods(state, pod, table.infos[row], table.infos)
            if failed is not None:
                attempt.fail_at[row] = failed[0]
                attempt.statuses[failed[0]][row] = failed[1]
                return False
            attempt.fail_at[row] = k_all
            return True

        return self._search(attempt, pod, table, state, np.zeros(n, bool), np.ones(n, bool), resolve)

    def finish_reference(self, attempt: Attempt, pod: Pod, cache: Cache) -> Attempt:
        """Score ``attempt``'s feasible nodes per node (every plugin through score/normalize)."""
        rows = attempt.feasible
        if len(rows) < 2:
            return attempt
        table = cache.table
        state = CycleState(table.infos)
        infos = [table.infos[r] for r in rows.tolist()]
        for plugin, _ in self.scores:
            if hasattr(plugin, "pre_score"):
                plugin.pre_score(state, pod, infos)
        attempt.scores = []
        for plugin, weight in self.scores:
            raw = {info.name: plugin.score(state, pod, info) for info in infos}
            normalized = plugin.normalize(state, pod, raw) if hasattr(plugin, "normalize") else raw
            attempt.scores.append(ScoreColumn(plugin.name, weight, np.array([raw[x.name] for x in infos], np.int64),
                                              np.array([normalized[x.name] for x in infos], np.int64)))
        return self._pick(attempt, table)


class Scheduler:
    """Informers → cache and queue → runner → assume → bind (see the module docstring)."""

    def __init__(self, client: Clientset, profiles: list[Profile] | None = None) -> None:
        self.client = client
        profiles = profiles or [Profile()]
        self.name = profiles[0].scheduler_name
        self.cache = Cache()
        self.queue = SchedulingQueue()
        self.handle = Handle(self.namespace_labels, self.queue.nominator)
        self.runners = {p.scheduler_name: Runner(p, self.handle) for p in profiles}
        self.diagnoses = DiagnosisStore()
        self.recorder = EventRecorder(client.events, self.name)
        self.node_informer = SharedInformer(client.nodes)
        self.pod_informer = SharedInformer(client.pods)
        self.namespace_informer = SharedInformer(client.namespaces)
        self.node_informer.add_event_handler(self._node_changed, lambda o, n: self._node_changed(n),
                                             self._node_deleted)
        self.pod_informer.add_event_handler(self._pod_changed, lambda o, n: self._pod_changed(n), self._pod_deleted)
        self.namespace_informer.add_event_handler(lambda ns: self._namespace_changed(None, ns),
                                                  self._namespace_changed)
        self._binds = asyncio.Semaphore(MAX_BINDS_IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()
        self.scheduled = 0

    # --- informer handlers ------------------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """A namespace's labels from the informer; none for a namespace not (yet) seen, as kube-scheduler's
        ``GetNamespaceLabelsSnapshot``."""
        obj = self.namespace_informer.store.get_by_key(namespace)
        return (obj.get("metadata", {}).get("labels") or {}) if obj else {}

    def _namespace_changed(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """A namespace added or relabelled may now match (or stop matching) a ``namespaceSelector``: pods that
        InterPodAffinity rejected get another try."""
        labels = new.get("metadata", {}).get("labels")
        if old is None or old.get("metadata", {}).get("labels") != labels:
            self.queue.move_all_to_active_or_backoff(
                "NamespaceAdd" if old is None else "NamespaceUpdate",
                lambda info: interpodaffinity.NAME in info.unschedulable_plugins)

    def _node_changed(self, node: dict[str, Any]) -> None:
        if self.cache.add_node(node):
            self.queue.move_all_to_active_or_backoff("NodeChange")

    def _node_deleted(self, node: Any) -> None:
        obj = getattr(node, "obj", node)
        self.cache.remove_node(obj["metadata"]["name"])

    def _pod_changed(self, pod: Pod) -> None:
        key = pod_key(pod)
        if _spec(pod).get("nodeName"):
            self.queue.delete(key)  # and its nomination: it is bound
            was_counted = key in self.cache.pod_nodes
            newly_bound = not was_counted or self.cache.is_assumed(key)
            self.cache.add_pod(pod)
            if is_terminated(pod):
                if was_counted:
                    self.queue.move_all_to_active_or_backoff("AssignedPodTerminated")
            elif newly_bound:
                self.queue.move_all_to_active_or_backoff(
                    "AssignedPodAdd", lambda info: _pod_add_may_help(info.pod, pod, self.namespace_labels))
            return
        if pod["metadata"].get("deletionTimestamp") or _spec(pod).get("schedulerName", "default-scheduler") \
                not in self.runners:
            self.queue.delete(key)
            return
        if self.cache.is_assumed(key):
            return  # our own decision, not yet seen bound
        self.queue.update(pod) if self.queue.where(key) else self.queue.add(pod)

    def _pod_deleted(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)
        key = pod_key(obj)
        self.queue.delete(key)
        if key in self.cache.pod_nodes:
            self.cache.remove_pod(key)
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")

    # --- one scheduling cycle ---------------------------------------------------------------------------------
    def schedule_one(self, info: QueuedPodInfo) -> Attempt | None:
        pod = info.pod
        runner = self.runners.get(_spec(pod).get("schedulerName", "default-scheduler"))
        if runner is None:
            self.queue.done(info.key)
            return None
        try:
            attempt = runner.find_node(pod, self.cache, info.attempts)
        except Exception as err:  # one bad pod must not stop the scheduler
            log.exception("scheduling %s failed", info.key)
            self.diagnoses.record(Attempt(info.key, info.attempts, now_rfc3339(), [], [], np.zeros(0, np.int64),
                                          np.zeros(0, np.int16), [], result="Error", message=str(err)))
            self._scheduler_error(info, str(err))
            return None
        self.diagnoses.record(attempt)
        if attempt.node is None:
            result = self._post_filter(runner, pod, attempt)
            # As kube-scheduler's handleSchedulingFailure: the nominator first, so the next cycles already keep
            # the room, then the status write.
            self.queue.nominator.add(pod, result.nominated_node)
            self.queue.add_unschedulable(info, attempt.unschedulable_plugins())
            self._spawn(self._unschedulable(pod, attempt.message, result.nominated_node, result.candidate))
            return attempt
        self.cache.assume_pod(pod, attempt.node)
        self.queue.nominator.delete(info.key)  # its room is now held by the assumed pod itself
        self.queue.done(info.key)
        self._spawn(self._bind(info, attempt.node))
        return attempt

    def _post_filter(self, runner: Runner, pod: Pod, attempt: Attempt) -> PostFilterResult:
        """The PostFilter plugins (DefaultPreemption): victims and the node to nominate, or, without a candidate,
        their note appended to the attempt's message (as Kubernetes' FitError appends its PostFilter message).
        A profile without PostFilter plugins only clears the nomination, as kube-scheduler does."""
        try:
            result = runner.post_filter(pod, self.cache, attempt)
        except Exception:  # preemption is best effort; the pod stays unschedulable
            log.exception("preemption for %s failed", pod_key(pod))
            return PostFilterResult(None)
        if result is None:
            log.debug("No PostFilter plugins are registered, so no preemption will be performed")
            return PostFilterResult(None, clear_nomination=True)
        if result.candidate is None and result.message:
            attempt.message += f" {result.message}."
        return result

    async def _preempt(self, pod: Pod, candidate: Candidate) -> None:
        """As kube-scheduler's prepareCandidate: mark each victim DisruptionTarget, record Preempted, delete it;
        then clear the nomination of lower-priority pods nominated to the node (they may no longer fit there)."""
        condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                     "message": f"{self.name}: preempting to accommodate a higher priority pod",
                     "lastTransitionTime": now_rfc3339()}
        for victim in candidate.victims:
            meta = victim["metadata"]
            try:
                await self.client.pods.patch(meta["name"], {"status": {"conditions": [condition]}}, "strategic",
                                             meta["namespace"], subresource="status")
                self.recorder.event(victim, "Normal", "Preempted",
                                    f"Preempted by pod {pod['metadata'].get('uid', '')} on node {candidate.node}")
                await self.client.pods.delete(meta["name"], meta["namespace"],
                                              preconditions={"uid": meta["uid"]} if meta.get("uid") else None)
            except errors.NotFound:
                continue
            except errors.StatusError as err:
                log.warning("preempting %s for %s failed: %s", pod_key(victim), pod_key(pod), err)
        for nominated in self.queue.nominator.nominated_pods_for_node(candidate.node):
            if pod_priority(nominated) < pod_priority(pod):
                meta = nominated["metadata"]
                try:
                    await self.client.pods.patch(meta["name"], {"status": {"nominatedNodeName": None}}, "strategic",
                                                 meta["namespace"], subresource="status")
                except errors.StatusError as err:
                    log.info("could not clear the nomination of %s: %s", pod_key(nominated), err)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, info: QueuedPodInfo, node_name: str) -> None:
        pod = info.pod
        async with self._binds:
            try:
                await self.client.pods.bind(pod, node_name)
            except errors.StatusError as err:
                log.warning("binding %s to %s failed: %s", info.key, node_name, err)
                if self.cache.is_assumed(info.key):  # as ForgetPod: not once the watch has shown the pod bound
                    self.cache.forget_pod(info.key)
                    self.queue.move_all_to_active_or_backoff("BindFailed")
                self._scheduler_error(info, str(err))
                return
        self.scheduled += 1
        meta = pod["metadata"]
        self.recorder.event(pod, "Normal", "Scheduled",
                            f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}")

    def _scheduler_error(self, info: QueuedPodInfo, message: str) -> None:
        """As kube-scheduler's ``handleSchedulingFailure`` after an error (a failed bind, a plugin that raised), with
        ``clearNominatedNode``: the nomination is dropped from the nominator at once and from
        ``status.nominatedNodeName`` by the status write, which also says PodScheduled=False (reason
        SchedulerError) next to a FailedScheduling event. The pod is retried after its backoff, as the informer now
        shows it, unless the informer shows it gone or bound; then only the event is recorded (kube-scheduler would
        also write the condition, even onto a pod bound meanwhile)."""
        self.queue.nominator.delete(info.key)
        latest = self.pod_informer.store.get_by_key(info.key)
        if latest is None or _spec(latest).get("nodeName"):
            self.queue.done(info.key)
            self.recorder.event(info.pod, "Warning", "FailedScheduling", message)
            return
        info.pod = latest
        self.queue.add_backoff(info)
        self._spawn(self._unschedulable(latest, message, "", reason="SchedulerError"))

    async def _unschedulable(self, pod: Pod, message: str, nominated: str | None = None,
                             preemption: Candidate | None = None, reason: str = "Unschedulable") -> None:
        """FailedScheduling, PodScheduled=False (``reason``) and the nomination (``nominated``: a node, "" to clear,
        None to leave it; written only when it changes); then the victims go. In this order, so the status write
        cannot land after the bind that the victims' deletion leads to."""
        self.recorder.event(pod, "Warning", "FailedScheduling", message)
        meta = pod["metadata"]
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
        status: dict[str, Any] = {"conditions": [condition]}
        if nominated is not None and nominated != ((pod.get("status") or {}).get("nominatedNodeName") or ""):
            status["nominatedNodeName"] = nominated or None  # None removes it
        try:
            await self.client.pods.patch(meta["name"], {"status": status}, "strategic",
                                         meta["namespace"], subresource="status")
        except errors.StatusError as err:
            log.info("could not mark %s unschedulable: %s", pod_key(pod), err)
        if preemption is not None:
            await self._preempt(pod, preemption)

    # --- lifecycle --------------------------------------------------------------------------------------------
    async def start_informers(self, stop: asyncio.Event) -> list[asyncio.Task[None]]:
        """Start the informers and the queue's timer; return once the informers have synced or ``stop`` is set
        (as client-go's ``WaitForCacheSync(stopCh)``: an unreachable apiserver must not keep a stopping process
        alive). The tasks end when ``stop`` is set (``close`` waits for them)."""
        informers = (self.namespace_informer, self.node_informer, self.pod_informer)
        tasks = [*(asyncio.create_task(informer.run(stop)) for informer in informers),
                 asyncio.create_task(self.queue.run(stop))]
        await wait_for_cache_sync(*informers, stop=stop)
        return tasks

    async def schedule(self, stop: asyncio.Event) -> None:
        """Pop and schedule pods until ``stop`` (only the leader calls this)."""
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                get = asyncio.ensure_future(self.queue.pop())
                done, _ = await asyncio.wait({get, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                self.schedule_one(get.result())
                await asyncio.sleep(0)  # let the watch and the binds run between pods
        finally:
            stopped.cancel()

    async def run(self, stop: asyncio.Event) -> None:
        """Informers and the loop without leader election (as ``--leader-elect=false``)."""
        tasks = await self.start_informers(stop)
        try:
            await self.schedule(stop)
        finally:
            await self.close(tasks)

    async def close(self, tasks: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        await self.recorder.close()
