"""The framework runner: a profile's PreFilter → Filter → PreScore → Score → pick over the node table.

As kube-scheduler's ``schedulePod``: PreFilter, then Filter over nodes from a rotating start index until
``percentageOfNodesToScore`` feasible nodes are found (kube-scheduler's adaptive default), PreScore and Score the
feasible ones, weights × normalised scores, the highest total wins, ties at random.

Speed: the runner asks each plugin for its batch form (framework's ``BatchFilterPlugin``/``BatchScorePlugin``:
verdicts and scores over every row of the node table at once) and calls a plugin per node only where it has
none, declines for the pod, or leaves rows undecided; it knows no plugin by name. Nodes with nominated pods (a
preemptor waiting for its victims to go) are filtered per node with those pods first
(``filter_with_nominated_pods``), so a less important pod cannot take the room made for them. A pod that
carries ``status.nominatedNodeName`` is first tried on that node alone (PreferNominatedNode): if it fits there it
goes there, without filtering or scoring the others. ``find_node_reference`` is the plain per-node runner (every
plugin called per node); unit tests check both agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from apimachinery.meta import now_rfc3339

from .cache import Cache
from .config import Profile
from .diagnosis import Attempt, ScoreColumn
from .framework import (
    SUCCESS,
    AssignedPodAddHint,
    BatchFilterPlugin,
    BatchScorePlugin,
    BatchVerdicts,
    CycleState,
    Handle,
    NamespaceAware,
    NodeInfo,
    NormalizeScorePlugin,
    ObjectPatch,
    Pod,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Status,
    VolumeAware,
    implements,
    pod_priority,
)
from .nodetable import NodeTable
from .nominator import nominated_node_name
from .plugins import REGISTRY
from .queue import pod_key

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind``: all of a small cluster, else a share (adaptive if 0)."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


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
            if isinstance(plugin, NamespaceAware):
                plugin.namespace_labels = self.handle.namespace_labels
            if isinstance(plugin, VolumeAware):
                plugin.volume_lister = self.handle.volume_lister
        self.next_start = 0

    def pre_bind(self, pod: Pod, node: NodeInfo) -> list[ObjectPatch]:
        """The writes the profile's PreBind plugins ask for before ``pod`` is bound to ``node``."""
        return [patch for plugin in self.filters if implements(plugin, PreBindPlugin)
                for patch in plugin.pre_bind(pod, node)]

    # --- queueing hints -------------------------------------------------------------------------------------------
    def _plugins(self) -> list[Any]:
        return [*self.filters, *(p for p, _ in self.scores)]

    def assigned_pod_add_may_help(self, pending: Pod, added: Pod) -> bool:
        """Could a pod just bound make ``pending`` fit? Asked of the profile's plugins that give a hint."""
        return any(p.assigned_pod_add_may_help(pending, added) for p in self._plugins()
                   if implements(p, AssignedPodAddHint))

    def namespace_aware(self) -> set[str]:
        """The plugins whose verdicts depend on namespace labels."""
        return {p.name for p in self._plugins() if implements(p, NamespaceAware)}

    # --- batch forms ----------------------------------------------------------------------------------------------
    def _filter_form(self, plugin: Any, pod: Pod, table: NodeTable, state: CycleState) -> BatchVerdicts | None:
        """The plugin's verdicts over all rows, or None: every row goes through its per-node ``filter``."""
        if implements(plugin, BatchFilterPlugin):
            verdicts: BatchVerdicts = plugin.batch_filter(state, pod, table)
            return verdicts
        return None

    def _score_form(self, plugin: Any, pod: Pod, table: NodeTable, state: CycleState, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(raw, normalized) for the feasible ``rows``, or None: the per-node ``score`` and ``normalize``."""
        if implements(plugin, BatchScorePlugin):
            scores: tuple[np.ndarray, np.ndarray] = plugin.batch_score(state, pod, table, rows)
            return scores
        return None

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
            if implements(plugin, PreFilterPlugin) and not plugin.pre_filter(state, pod, table.infos).ok:
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
            form = self._filter_form(plugin, pod, table, state)
            unknown: np.ndarray | None
            if form is None:
                passed, unknown = np.zeros(n, bool), np.ones(n, bool)
            else:
                passed, unknown = form.passed, form.undecided
                attempt.statuses[k] = form.statuses
            clean = fail_at == k_all
            if unknown is not None:
                needs_call |= unknown & clean
                failed = ~passed & ~unknown
            else:
                failed = ~passed
            fail_at[failed & clean] = k
            undecided.append(unknown)
            if unknown is not None and unknown.any() and implements(plugin, PreFilterPlugin):
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
                    attempt.override_status(k, row, status)
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
                if implements(plugin, PreScorePlugin):
                    plugin.pre_score(state, pod, infos)
            for i, plugin, weight in per_node:
                columns[i] = _score_per_node(plugin, weight, state, pod, infos)
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
            result: PostFilterResult = plugin.post_filter(pod, infos, verdicts, fits_on)
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
            if implements(plugin, PreFilterPlugin):
                status = plugin.pre_filter(state, pod, table.infos)
                if not status.ok:
                    attempt.pre_filter = (plugin.name, status)
                    attempt.evaluated = np.arange(n)
                    return self._finish(attempt, pod, table, None)

        def resolve(row: int) -> bool:
            failed = self.filter_with_nominated_pods(state, pod, table.infos[row], table.infos)
            if failed is not None:
                attempt.override_status(failed[0], row, failed[1])
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
            if implements(plugin, PreScorePlugin):
                plugin.pre_score(state, pod, infos)
        attempt.scores = [_score_per_node(plugin, weight, state, pod, infos) for plugin, weight in self.scores]
        return self._pick(attempt, table)


def _score_per_node(plugin: Any, weight: int, state: CycleState, pod: Pod, infos: list[NodeInfo]) -> ScoreColumn:
    """A score plugin's column from ``score`` per node and its ``normalize`` (after its PreScore ran)."""
    raw = {info.name: plugin.score(state, pod, info) for info in infos}
    normalized = plugin.normalize(state, pod, raw) if implements(plugin, NormalizeScorePlugin) else raw
    return ScoreColumn(plugin.name, weight, np.array([raw[x.name] for x in infos], np.int64),
                       np.array([normalized[x.name] for x in infos], np.int64))
