"""``kubelab ui``: the web console (console/) with the launcher's trace and explanation plugged in.

The console is a component: it may import only kubeclient and apimachinery, so it cannot import the 13-step trace
(kubelab/commands/trace.py) nor the "smallest change" search (kubelab/commands/explain.py, which uses the
scheduler's NodeInfo). Rather than move them (the trace is being reworked for millisecond precision; a second
copy would drift), the launcher runs the console process itself and hands it these two functions as
``console.app.Providers``: ``kubelab up`` starts ``python -m kubelab.ui`` like any component, and the pod page
shows exactly what ``kubelab trace pod -o json`` and ``kubelab explain pod`` print.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from console.app import Providers
from kubeclient.config import build_config
from kubelab.commands import explain, trace

__all__ = ["providers"]


def _client_factory(master: str | None, kubeconfig: str | None) -> Callable[[], httpx.Client]:
    config = build_config(master=master, kubeconfig=kubeconfig, user_agent="kubelab-console")
    headers = {"User-Agent": config.user_agent, **({"Authorization": f"Bearer {config.token}"} if config.token else {})}
    verify: Any = config.ssl_context() or True
    return lambda: httpx.Client(base_url=config.host, headers=headers, verify=verify, timeout=30)


def providers(master: str | None, kubeconfig: str | None, scheduler: str | None = None,
              audit_log: Path | None = None) -> Providers:
    """The trace and the explanation over the apiserver the flags name (and ``scheduler``'s debug endpoint, else
    the one its leader Lease names); the trace reads ``audit_log`` for its exact times when given."""
    open_api = _client_factory(master, kubeconfig)

    def trace_of(namespace: str, name: str) -> dict[str, Any]:
        with open_api() as api:
            evidence = trace.gather(api, namespace, name, audit_log)
        doc: dict[str, Any] = json.loads(trace.to_json(evidence, trace.build_steps(evidence)))
        return doc

    def explain_of(namespace: str, name: str) -> dict[str, Any]:
        with open_api() as api:
            diagnosis, _ = explain.explain(api, namespace, name, scheduler,
                                           lambda url: httpx.Client(base_url=url, timeout=10))
            doc: dict[str, Any] = {"diagnosis": diagnosis}
            pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
            if diagnosis.get("result") != "Scheduled" and not (pod.get("spec") or {}).get("nodeName"):
                nodes = api.get("/api/v1/nodes").json().get("items") or []
                pods = api.get("/api/v1/pods").json().get("items") or []
                found = explain.nearest_node(pod, nodes, pods, diagnosis)
                if found is not None:
                    doc["nearest"] = {"node": found[0], "changes": [asdict(c) for c in found[1]]}
        return doc

    return Providers(trace=trace_of, explain=explain_of)
