"""What one scheduling attempt decided, per node and plugin, for ``kubelab explain`` and ``/debug/explain``.

An ``Attempt`` keeps what the runner computed anyway — per node the index of the first failing filter, each
filter's statuses as its batch form gave them (often codes per row, read as a Status only when asked) or as its
per-node calls returned them, the score arrays of the feasible nodes — and builds
the per-node JSON only when asked (``to_dict``), so a 5,000-node cluster does not pay for dicts nobody reads.
As Kubernetes, a node's filters stop at the first failure; nodes the attempt never reached (the search stops
after ``percentageOfNodesToScore`` feasible nodes) are left out. ``DiagnosisStore`` keeps the last attempt of
the ~1,000 most recently tried pods.
"""

from __future__ import annotations

from collections import ChainMap, Counter, OrderedDict
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .framework import Code, CodedStatuses, Status, unschedulable

Result = Literal["Scheduled", "Unschedulable", "Error"]
STORE_SIZE = 1000


@dataclass
class ScoreColumn:
    plugin: str
    weight: int
    raw: np.ndarray  # aligned with Attempt.feasible
    normalized: np.ndarray


@dataclass
class Attempt:
    pod: str
    attempt: int
    time: str
    node_names: list[str]  # node order of the attempt (row i is node_names[i])
    filters: list[str]  # filter plugin names, in order
    evaluated: np.ndarray  # rows the filters ran on, in search order
    fail_at: np.ndarray  # per row: index of the first failing filter (len(filters): passed all)
    statuses: list[Mapping[int, Status]]  # per filter: rows it rejected, with their Status
    pre_filter: tuple[str, Status] | None = None  # a PreFilter that rejected the pod for every node
    feasible: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scores: list[ScoreColumn] = field(default_factory=list)
    totals: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    result: Result = "Unschedulable"
    node: str | None = None
    message: str = ""

    # --- per node -----------------------------------------------------------------------------------------------
    def status_of(self, row: int) -> tuple[str, Status] | None:
        """(plugin, status) of the filter that rejected ``row``; None if it passed every filter."""
        if self.pre_filter is not None:
            return self.pre_filter
        k = int(self.fail_at[row])
        if k >= len(self.filters):
            return None
        return self.filters[k], self.statuses[k].get(row) or unschedulable()

    def override_status(self, k: int, row: int, status: Status) -> None:
        """Record that filter ``k`` rejected ``row`` with ``status``, over whatever ``statuses[k]`` held (it may be
        a mapping shared with a cache, so writes go to an overlay) — for a verdict found after the array pass."""
        self.fail_at[row] = k
        current = self.statuses[k]
        if not isinstance(current, ChainMap):
            current = self.statuses[k] = ChainMap({}, current)  # type: ignore[arg-type]
        overlay: MutableMapping[int, Status] = current
        overlay[row] = status

    def unschedulable_plugins(self) -> set[str]:
        """The filters that rejected at least one evaluated node (kube-scheduler's ``UnschedulablePlugins``)."""
        if self.pre_filter is not None:
            return {self.pre_filter[0]}
        return {self.filters[k] for k in np.unique(self.fail_at[self.evaluated]).tolist() if k < len(self.filters)}

    def reason_counts(self) -> Counter[str]:
        """How many evaluated nodes each reason rejected (FitError's histogram)."""
        counts: Counter[str] = Counter()
        if self.pre_filter is not None:
            for reason in self.pre_filter[1].reasons:
                counts[reason] += len(self.evaluated)
            return counts
        rows = self.evaluated
        fail_at = self.fail_at[rows]
        for k in range(len(self.filters)):
            failed = rows[fail_at == k]
            if not len(failed):
                continue
            coded = self.statuses[k]
            if isinstance(coded, CodedStatuses):  # count codes, not rows
                for code, times in enumerate(np.bincount(coded.codes[failed]).tolist()):
                    status = coded.statuses[code] if times else None
                    for reason in status.reasons if status else ():
                        counts[reason] += times
                continue
            for row in failed.tolist():
                status = self.statuses[k].get(row)
                for reason in status.reasons if status else ():
                    counts[reason] += 1
        return counts

    def failure_message(self, total: int) -> str:
        """FitError's text: a PreFilter's rejection as it is (``0/3 nodes are available: persistentvolumeclaim
        "x" not found.``), else the histogram of the filters' reasons."""
        if self.pre_filter is not None:
            return f"0/{total} nodes are available: {', '.join(self.pre_filter[1].reasons)}."
        return failure_message_from_counts(total, self.reason_counts())

    def to_dict(self) -> dict[str, Any]:
        nodes: dict[str, Any] = {}
        positions = {int(r): i for i, r in enumerate(self.feasible.tolist())}
        for row in self.evaluated.tolist():
            failed = self.status_of(row)
            if failed is None:
                filters = [{"plugin": p, "code": Code.SUCCESS.value, "reasons": []} for p in self.filters]
            else:
                plugin, status = failed
                upto = self.filters.index(plugin) if plugin in self.filters else 0
                filters = [{"plugin": p, "code": Code.SUCCESS.value, "reasons": []} for p in self.filters[:upto]]
                filters.append({"plugin": plugin, "code": status.code.value, "reasons": list(status.reasons)})
            entry: dict[str, Any] = {"filters": filters, "scores": [], "total": 0}
            i = positions.get(row)
            if i is not None and self.scores:
                entry["scores"] = [{"plugin": c.plugin, "raw": int(c.raw[i]), "normalized": int(c.normalized[i]),
                                    "weight": c.weight} for c in self.scores]
                entry["total"] = int(self.totals[i])
            nodes[self.node_names[row]] = entry
        return {"pod": self.pod, "attempt": self.attempt, "time": self.time, "result": self.result,
                "node": self.node, "message": self.message, "nodes": nodes}


def failure_message_from_counts(total: int, counts: Counter[str]) -> str:
    """``0/3 nodes are available: 1 node(s) had untolerated taint {check: mycheck}, 2 Insufficient cpu.``"""
    parts = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))  # as FitError sorts them
    return f"0/{total} nodes are available: {parts}." if parts else f"0/{total} nodes are available."


def failure_message(total: int, statuses: dict[str, Status]) -> str:
    return failure_message_from_counts(total, Counter(r for s in statuses.values() for r in s.reasons))


class DiagnosisStore:
    """The last attempt of the most recently tried pods (an LRU bounded at ``size`` pods)."""

    def __init__(self, size: int = STORE_SIZE) -> None:
        self.size = size
        self._attempts: OrderedDict[str, Attempt] = OrderedDict()

    def record(self, attempt: Attempt) -> None:
        self._attempts[attempt.pod] = attempt
        self._attempts.move_to_end(attempt.pod)
        while len(self._attempts) > self.size:
            self._attempts.popitem(last=False)

    def get(self, pod: str) -> Attempt | None:
        return self._attempts.get(pod)

    def __len__(self) -> int:
        return len(self._attempts)
