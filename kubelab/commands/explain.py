"""`kubelab explain pod NAME`: why the scheduler put a pod where it did, or why it could not place it.

The scheduler records, for its latest attempt at each pod, every node's filter verdicts and score plugins'
raw, normalised and weighted scores, and serves that at ``GET /debug/explain/{namespace}/{name}`` on its
healthz port; the leader announces that port in its Lease (``kube-system/kube-scheduler``, annotation
``kubelab.io/debug-endpoint``). This command prints it as a table — one row per node: the first failing filter
and its reason, or each score plugin's weighted score and the total, the chosen node marked.

For an unschedulable pod it goes one step further, from the pod, the nodes and the pods on them as the
apiserver has them: for each node it lists what blocks the pod (an untolerated taint, the cpu or memory it
lacks, a label it needs, a cordon, a host port) using the scheduler's own filter functions, names the nearest
node (fewest blockers, then the smallest shortfall) and prints the smallest change that would make the pod fit
there (a toleration as YAML, the missing resources, the `kubectl label` to run). What the scheduler alone can
judge (inter-pod affinity, topology spread) is taken from its recorded reasons.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from apimachinery.nodeaffinity import term_matches
from apimachinery.quantity import format_cpu_milli
from apimachinery.taints import tolerates, untolerated
from kubelab.commands.podtarget import add_pod_arguments, apiserver_client, unreachable
from kubelab.table import render_table
from scheduler.framework import NodeInfo, pod_requests
from scheduler.plugins.nodeports import fits_ports
from scheduler.plugins.nodeunschedulable import TAINT as UNSCHEDULABLE_TAINT
from scheduler.plugins.volumerestrictions import has_disk_conflict

__all__ = ["Change", "ExplainError", "add_arguments", "blockers", "nearest_node", "render", "run"]

Object = dict[str, Any]
Diagnosis = dict[str, Any]

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
ENDPOINT_ANNOTATION = "kubelab.io/debug-endpoint"
CHOSEN = "*"
# Filters whose verdict depends on the whole cluster: only the scheduler's recorded reason can tell.
SCHEDULER_ONLY = ("InterPodAffinity", "PodTopologySpread")


class ExplainError(Exception):
    """Something the user must fix first (no such pod, no scheduler endpoint, ...)."""


@dataclass(frozen=True)
class Change:
    """One thing that keeps the pod off a node, and what would remove it."""

    kind: str  # toleration | cpu | memory | ephemeral-storage | pods | label | uncordon | hostPort | volume | other
    summary: str
    snippet: str = ""  # YAML to add to the pod, or a command to run
    shortfall: float = 0.0  # the missing share of the node's allocatable (resources only), to rank nodes


# --- rendering the scheduler's record ----------------------------------------------------------------------

def score_columns(diagnosis: Diagnosis) -> list[tuple[str, int]]:
    """(plugin, weight) of every score plugin in the record, in the order the scheduler ran them."""
    columns: dict[str, int] = {}
    for entry in diagnosis.get("nodes", {}).values():
        for score in entry.get("scores") or []:
            columns.setdefault(score["plugin"], int(score.get("weight", 1)))
    return list(columns.items())


def verdict(entry: Object) -> str:
    """``feasible`` or the first failing filter with its first reason."""
    for f in entry.get("filters") or []:
        if f.get("code", "Success") != "Success":
            reasons = f.get("reasons") or []
            return f"{f['plugin']}: {reasons[0]}" if reasons else f"{f['plugin']}: {f['code']}"
    return "feasible"


def render(diagnosis: Diagnosis) -> str:
    """The header lines and one table row per node, the chosen node first-column-marked, best total first."""
    node = diagnosis.get("node")
    lines = [f"Pod {diagnosis.get('pod')}: {diagnosis.get('result')}"
             + (f" on {node}" if node else "")
             + f" (attempt {diagnosis.get('attempt')}, {diagnosis.get('time')})"]
    if diagnosis.get("message"):
        lines.append(f"  {diagnosis['message']}")
    columns = score_columns(diagnosis)
    headers = ["", "NODE", "VERDICT", *(f"{plugin}×{weight}" for plugin, weight in columns), "TOTAL"]
    rows = []
    entries = diagnosis.get("nodes", {})

    def order(name: str) -> tuple[int, int, str]:
        entry = entries[name]
        return (0 if verdict(entry) == "feasible" else 1, -int(entry.get("total") or 0), name)

    for name in sorted(entries, key=order):
        entry = entries[name]
        scores = {s["plugin"]: s for s in entry.get("scores") or []}
        feasible = verdict(entry) == "feasible"
        cells = [str(int(scores[p].get("normalized", 0)) * int(scores[p].get("weight", w))) if p in scores else "-"
                 for p, w in columns]
        total = str(entry.get("total", "-")) if feasible and scores else "-"
        rows.append([CHOSEN if name == node else "", name, verdict(entry), *cells, total])
    lines.append("")
    lines.append(render_table(headers, rows) if rows else "(no nodes were considered)")
    return "\n".join(lines)


# --- the smallest change -------------------------------------------------------------------------------------

def toleration_yaml(taint: Object) -> str:
    lines = ["tolerations:", f'- key: "{taint["key"]}"']
    if taint.get("value"):
        lines += ['  operator: "Equal"', f'  value: "{taint["value"]}"']
    else:
        lines.append('  operator: "Exists"')
    lines.append(f'  effect: "{taint["effect"]}"')
    return "\n".join(lines)


def _format_memory(count: int) -> str:
    return f"{math.ceil(count / 2**20)}Mi" if count >= 2**20 else f"{count}"


def resource_changes(pod: Object, info: NodeInfo) -> list[Change]:
    want, have, used = pod_requests(pod), info.allocatable, info.requested
    out = []
    if have.pods and used.pods + 1 > have.pods:
        out.append(Change("pods", f"{info.name} already runs {used.pods} of {have.pods} pods", shortfall=1.0))
    for kind, need, cap, taken, fmt in (
            ("cpu", want.milli_cpu, have.milli_cpu, used.milli_cpu, format_cpu_milli),
            ("memory", want.memory, have.memory, used.memory, _format_memory),
            ("ephemeral-storage", want.ephemeral_storage, have.ephemeral_storage, used.ephemeral_storage,
             _format_memory)):
        free = cap - taken
        if need and need > free:
            out.append(Change(kind, f"lacks {fmt(need - free)} {kind}: the pod requests {fmt(need)}, "
                                    f"{info.name} has {fmt(max(free, 0))} free of {fmt(cap)}",
                              shortfall=(need - free) / cap if cap else 1.0))
    return out


def _label_fix(expression: Object, labels: dict[str, str]) -> tuple[str, str] | None:
    """(key, value) to set, ("key", "-") to remove, to satisfy one node-selector expression."""
    key, op, values = expression.get("key", ""), expression.get("operator"), expression.get("values") or []
    if op == "In" and values:
        return key, values[0]
    if op == "Exists":
        return key, labels.get(key) or "true"
    if op in ("NotIn", "DoesNotExist"):
        return key, "-"
    if op in ("Gt", "Lt") and len(values) == 1 and values[0].lstrip("-").isdigit():
        return key, str(int(values[0]) + (1 if op == "Gt" else -1))
    return None


def affinity_changes(pod: Object, info: NodeInfo) -> list[Change]:
    """The labels the node needs for the pod's nodeSelector and required node affinity (the cheapest term)."""
    spec, labels = pod.get("spec", {}), info.labels
    fixes = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if labels.get(k) != v}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    out: list[Change] = []
    if terms and not any(term_matches(t, labels, info.name) for t in terms):
        best: dict[str, str] | None = None
        for term in terms:
            if term.get("matchFields"):
                continue  # a node's name cannot be changed by a label
            term_fixes: dict[str, str] = {}
            for e in term.get("matchExpressions") or []:
                if not term_matches({"matchExpressions": [e]}, labels, info.name):
                    fix = _label_fix(e, labels)
                    if fix is None:
                        break
                    term_fixes[fix[0]] = fix[1]
            else:
                if term.get("matchExpressions") and (best is None or len(term_fixes) < len(best)):
                    best = term_fixes
        if best is None:
            out.append(Change("other", f"no required node affinity term can match {info.name}"))
        else:
            fixes.update(best)
    for key, value in fixes.items():
        if value == "-":
            out.append(Change("label", f"{info.name} must not have label {key}",
                              f"kubectl label node {info.name} {key}-"))
        else:
            out.append(Change("label", f"{info.name} needs label {key}={value}",
                              f"kubectl label node {info.name} {key}={value} --overwrite"))
    return out


def blockers(pod: Object, node: Object, node_pods: list[Object], recorded: Object | None = None) -> list[Change]:
    """Everything that keeps ``pod`` off ``node`` (empty: it fits), each with the change that removes it."""
    info = NodeInfo(node)
    for p in node_pods:
        meta = p.get("metadata", {})
        info.add_pod(f"{meta.get('namespace')}/{meta.get('name')}", p)
    spec = pod.get("spec", {})
    tolerations = spec.get("tolerations") or []
    out: list[Change] = []
    if spec.get("nodeName") and spec["nodeName"] != info.name:
        out.append(Change("other", f"spec.nodeName pins the pod to {spec['nodeName']}"))
    if node.get("spec", {}).get("unschedulable") and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
        out.append(Change("uncordon", f"{info.name} is cordoned", f"kubectl uncordon {info.name}"))
    for taint in untolerated(node.get("spec", {}).get("taints") or [], tolerations, ("NoSchedule", "NoExecute")):
        if taint.get("key") == UNSCHEDULABLE_TAINT["key"] and node.get("spec", {}).get("unschedulable"):
            continue  # the cordon above says it
        shown = f"{taint['key']}={taint['value']}" if taint.get("value") else taint["key"]
        out.append(Change("toleration", f"{info.name} has taint {shown}:{taint['effect']} the pod does not tolerate",
                          toleration_yaml(taint)))
    out += affinity_changes(pod, info)
    if not fits_ports(pod, info):
        out.append(Change("hostPort", f"a host port the pod asks for is taken on {info.name}"))
    out += resource_changes(pod, info)
    if has_disk_conflict(pod, info):
        out.append(Change("volume", f"a disk the pod mounts is in use on {info.name}"))
    for f in (recorded or {}).get("filters") or []:
        if f.get("plugin") in SCHEDULER_ONLY and f.get("code", "Success") != "Success":
            out.append(Change("other", "; ".join(f.get("reasons") or [f["plugin"]])))
    return out


def nearest_node(pod: Object, nodes: list[Object], pods: list[Object],
                 diagnosis: Diagnosis | None = None) -> tuple[str, list[Change]] | None:
    """The node with the fewest blockers, then the smallest resource shortfall (None: no nodes)."""
    by_node: dict[str, list[Object]] = {}
    for p in pods:
        name = p.get("spec", {}).get("nodeName")
        if name and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            by_node.setdefault(name, []).append(p)
    recorded = (diagnosis or {}).get("nodes", {})
    best: tuple[tuple[int, float, str], str, list[Change]] | None = None
    for node in nodes:
        name = node["metadata"]["name"]
        changes = blockers(pod, node, by_node.get(name, []), recorded.get(name))
        key = (len(changes), sum(c.shortfall for c in changes), name)
        if best is None or key < best[0]:
            best = (key, name, changes)
    return None if best is None else (best[1], best[2])


def render_nearest(name: str, changes: list[Change]) -> str:
    if not changes:
        return f"Nearest node: {name} — the pod fits there now; the scheduler will retry it."
    lines = [f"Nearest node: {name} ({len(changes)} change{'s' if len(changes) != 1 else ''} away)"]
    for change in changes:
        lines.append(f"  - {change.summary}")
        lines += [f"      {line}" for line in change.snippet.splitlines()]
    return "\n".join(lines)


# --- talking to the apiserver and the scheduler --------------------------------------------------------------

def _get(client: httpx.Client, path: str, what: str) -> Object:
    resp = client.get(path)
    if resp.status_code == 404:
        raise ExplainError(f"{what} not found")
    if resp.status_code >= 400:
        raise ExplainError(f"GET {path}: {resp.status_code} {resp.text.strip()[:200]}")
    result: Object = resp.json()
    return result


def debug_endpoint(api: httpx.Client) -> str:
    lease = _get(api, LEASE_PATH, "the scheduler's lease kube-system/kube-scheduler (is a scheduler running?)")
    endpoint = (lease.get("metadata", {}).get("annotations") or {}).get(ENDPOINT_ANNOTATION)
    if not endpoint:
        raise ExplainError(f"the scheduler's lease has no {ENDPOINT_ANNOTATION} annotation: start the scheduler "
                           "with --healthz-port, or pass --scheduler URL")
    return str(endpoint).rstrip("/")


def explain(api: httpx.Client, namespace: str, name: str, scheduler_url: str | None,
            open_client: Callable[[str], httpx.Client]) -> tuple[Diagnosis, str]:
    """Fetch the record (and, for an unschedulable pod, the cluster) and render both."""
    pod = _get(api, f"/api/v1/namespaces/{namespace}/pods/{name}", f"pod {namespace}/{name}")
    url = scheduler_url or debug_endpoint(api)
    with open_client(url) as scheduler:
        try:
            diagnosis = _get(scheduler, f"/debug/explain/{namespace}/{name}",
                             f"a scheduling record of {namespace}/{name} at {url} (bound by its kubelet, or not tried "
                             "yet)")
        except httpx.HTTPError as e:
            raise ExplainError(f"cannot reach the scheduler at {url}: {e}") from e
    text = render(diagnosis)
    if diagnosis.get("result") != "Scheduled" and not pod.get("spec", {}).get("nodeName"):
        nodes = _get(api, "/api/v1/nodes", "nodes").get("items") or []
        pods = _get(api, "/api/v1/pods", "pods").get("items") or []
        found = nearest_node(pod, nodes, pods, diagnosis)
        text += "\n\n" + (render_nearest(*found) if found else "There are no nodes.")
    return diagnosis, text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_pod_arguments(parser, "explain", "the scheduler places pods")
    parser.add_argument("--scheduler", default=None, metavar="URL",
                        help=f"the scheduler's debug endpoint (default: the leader lease's {ENDPOINT_ANNOTATION})")


def run(args: argparse.Namespace) -> int:
    api = apiserver_client(args, "explain")
    if api is None:
        return 1

    def open_client(url: str) -> httpx.Client:
        return httpx.Client(base_url=url, timeout=args.request_timeout)

    try:
        with api:
            diagnosis, text = explain(api, args.namespace, args.name, args.scheduler, open_client)
    except ExplainError as e:
        print(f"kubelab explain: {e}", file=sys.stderr)
        return 1
    except httpx.HTTPError as e:
        return unreachable("explain", api, e)
    print(json.dumps(diagnosis, indent=2) if args.output == "json" else text)
    return 0
