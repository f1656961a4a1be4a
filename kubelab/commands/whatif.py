"""``kubelab what-if drain|cordon|taint|delete node|apply -f``: where pods would go, changing nothing.

The running scheduler answers (``POST /debug/whatif``, scheduler/whatif.py): it applies the change to a copy of
its cache and runs its own profiles on the pods that would move, so the answer is the real code path and
configuration. This command finds the scheduler as ``kubelab explain`` does (the leader Lease's
``kubelab.io/debug-endpoint`` annotation, or ``--scheduler URL``) and prints per pod: evicted or blocked (and by
which PodDisruptionBudget), the node it would land on with the nodes that scored the same, or Pending with
FailedScheduling's message. ``-o json`` prints the scheduler's answer as it is.

    kubelab what-if drain node02
    kubelab what-if cordon node02
    kubelab what-if taint node02 dedicated=gpu:NoExecute
    kubelab what-if delete node node02
    kubelab what-if apply -f pod.yaml
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubelab.commands.explain import ExplainError, debug_endpoint
from kubelab.commands.podtarget import DEFAULT_SERVER, apiserver_client, unreachable
from kubelab.table import render_table

__all__ = ["add_arguments", "parse_taint", "render", "request_body", "run", "whatif"]

TAINT = re.compile(r"^(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$")


def parse_taint(text: str) -> dict[str, str]:
    """``key=value:Effect`` or ``key:Effect`` (kubectl taint's spelling)."""
    match = TAINT.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"invalid taint spec {text!r}: want key=value:Effect, Effect one of NoSchedule, PreferNoSchedule, "
            "NoExecute")
    return {k: v for k, v in match.groupdict().items() if v}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, help_ in (("drain", "cordon the node and evict its pods as kubectl drain --ignore-daemonsets"),
                        ("cordon", "mark the node unschedulable")):
        sub.add_parser(name, help=help_).add_argument("node")
    taint = sub.add_parser("taint", help="add a taint (NoExecute evicts pods that do not tolerate it)")
    taint.add_argument("node")
    taint.add_argument("taint", type=parse_taint, metavar="KEY=VALUE:EFFECT")
    delete = sub.add_parser("delete", help="delete a node (its pods go with it)")
    delete.add_argument("kind", choices=("node", "nodes", "no"))
    delete.add_argument("node")
    apply = sub.add_parser("apply", help="schedule the pods of a file (YAML or JSON, one or more documents)")
    apply.add_argument("-f", "--filename", required=True, type=Path)
    for p in sub.choices.values():
        p.add_argument("--master", default=None, metavar="URL",
                       help=f"the apiserver URL (default: the kubeconfig's server, else {DEFAULT_SERVER})")
        p.add_argument("--kubeconfig", default=None, metavar="PATH")
        p.add_argument("--scheduler", default=None, metavar="URL",
                       help="the scheduler's debug endpoint (default: the leader lease's annotation)")
        p.add_argument("-o", "--output", choices=("table", "json"), default="table")
        p.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS")


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """The change as ``POST /debug/whatif`` takes it."""
    action = "delete-node" if args.action == "delete" else args.action
    body: dict[str, Any] = {"action": action}
    if action == "apply":
        docs = [d for d in yaml.safe_load_all(args.filename.read_text()) if d]
        body["pods"] = docs
    else:
        body["node"] = args.node
    if action == "taint":
        body["taint"] = args.taint
    return body


def whatif(api: httpx.Client, body: dict[str, Any], scheduler_url: str | None, timeout: float) -> dict[str, Any]:
    url = scheduler_url or debug_endpoint(api)
    try:
        resp = httpx.post(f"{url.rstrip('/')}/debug/whatif", json=body, timeout=timeout)
    except httpx.HTTPError as e:
        raise ExplainError(f"cannot reach the scheduler at {url}: {e}") from e
    if resp.status_code == 404:
        raise ExplainError(f"the scheduler at {url} serves no what-if (an older scheduler?)")
    if resp.status_code >= 400:
        raise ExplainError(resp.json().get("message") if resp.headers.get("content-type", "").startswith(
            "application/json") else resp.text.strip()[:200])
    result: dict[str, Any] = resp.json()
    return result


def _where(entry: dict[str, Any]) -> str:
    if entry.get("eviction") == "blocked":
        return "stays (blocked)"
    if "result" not in entry:
        return "-"
    if entry["result"] == "Scheduled":
        equal = entry.get("equalNodes") or []
        return str(entry["node"]) + (f" (or {', '.join(equal)}: same score)" if equal else "")
    return "Pending"


def render(result: dict[str, Any]) -> str:
    change = result.get("change", {})
    what = change.get("action", "").replace("delete-node", "delete node")
    target = change.get("node") or ", ".join(change.get("pods") or [])
    taint = change.get("taint")
    if taint:
        target += f" {taint['key']}{'=' + taint['value'] if taint.get('value') else ''}:{taint['effect']}"
    nodes = result.get("nodes", 0)
    lines = [f"What if: {what} {target} ({result.get('schedulableNodes', nodes)} of {nodes} node(s) schedulable after "
             "the change)"]
    pods = result.get("pods") or []
    if not pods:
        lines.append("No pod would move.")
        return "\n".join(lines)
    rows = [[p["pod"], p.get("fromNode") or "-", p.get("eviction") or "new", _where(p)] for p in pods]
    lines += ["", render_table(["POD", "FROM", "EVICTION", "WOULD RUN ON"], rows)]
    notes = [f"  {p['pod']}: {p['reason']}" for p in pods if p.get("eviction") in ("blocked", "evicted-after")]
    notes += [f"  {p['pod']}: Pending: {p['message']}" for p in pods if p.get("result") == "Pending"]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        body = request_body(args)
    except (OSError, yaml.YAMLError) as e:
        print(f"kubelab what-if: {e}", file=sys.stderr)
        return 1
    api = apiserver_client(args, "what-if")
    if api is None:
        return 1
    try:
        with api:
            result = whatif(api, body, args.scheduler, args.request_timeout)
    except ExplainError as e:
        print(f"kubelab what-if: {e}", file=sys.stderr)
        return 1
    except httpx.HTTPError as e:
        return unreachable("what-if", api, e)
    print(json.dumps(result, indent=2) if args.output == "json" else render(result))
    return 0
