"""Discovery: /version, /api, /apis and the APIResourceLists, all built from the registered strategies.

kubectl 1.27+ first asks for aggregated discovery (``as=APIGroupDiscoveryList``, apidiscovery.k8s.io v2 from 1.30,
v2beta1 before): ``/api`` and ``/apis`` answer it with every group-version's resources in one document, built
from the same APIResourceLists as the legacy documents (``aggregated``), so custom resources appear in both as
soon as they are served. Without that Accept they answer the legacy APIVersions / APIGroupList.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import Any

from ..registry.registry import Registry
from ..registry.strategy import Strategy

KUBERNETES_VERSION = "v1.32.4"
SUBRESOURCE_VERBS: dict[str, tuple[str, list[str]]] = {
    # subresource: (kind, verbs)
    "status": ("", ["get", "patch", "update"]),
    "scale": ("Scale", ["get", "patch", "update"]),
    "binding": ("Binding", ["create"]),
    "eviction": ("Eviction", ["create"]),
    "log": ("Pod", ["get"]),
    "exec": ("PodExecOptions", ["create", "get"]),
    "attach": ("PodAttachOptions", ["create", "get"]),
    "portforward": ("PodPortForwardOptions", ["create", "get"]),
    "finalize": ("", ["update"]),
    "ephemeralcontainers": ("", ["get", "patch", "update"]),
    "approval": ("", ["get", "patch", "update"]),
    "proxy": ("", ["create", "delete", "get", "patch", "update"]),  # kind: <Kind>ProxyOptions
}
SUBRESOURCE_GROUPS = {"scale": ("autoscaling", "v1"), "eviction": ("policy", "v1")}


def version_info() -> dict[str, Any]:
    major, minor, _ = KUBERNETES_VERSION.lstrip("v").split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "kubelab",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{'amd64' if platform.machine() == 'x86_64' else platform.machine()}",
    }


def _resource_entries(strategy: Strategy) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": strategy.resource,
        "singularName": strategy.singular,
        "namespaced": strategy.namespaced,
        "kind": strategy.kind,
        "verbs": list(strategy.verbs),
    }
    if strategy.short_names:
        main["shortNames"] = list(strategy.short_names)
    if strategy.categories:
        main["categories"] = list(strategy.categories)
    entries = [main]
    for sub in strategy.subresources:
        kind, verbs = SUBRESOURCE_VERBS.get(sub, ("", ["get"]))
        if sub == "proxy":
            kind = f"{strategy.kind}ProxyOptions"
        entry: dict[str, Any] = {"name": f"{strategy.resource}/{sub}", "singularName": "",
                                 "namespaced": strategy.namespaced, "kind": kind or strategy.kind, "verbs": verbs}
        if sub in SUBRESOURCE_GROUPS:
            entry["group"], entry["version"] = SUBRESOURCE_GROUPS[sub]
        entries.append(entry)
    return entries


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    strategies = registry.strategies_of(group, version)
    if not strategies:
        return None
    resources = [entry for s in strategies for entry in _resource_entries(s)]
    if group == "" and any(s.resource == "pods" for s in strategies):
        resources.append({"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding",
                          "verbs": ["create"]})
    resources.sort(key=lambda r: r["name"])
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources}


def core_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions.get(group)
    if not group or not versions:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_groups(registry: Registry, served: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The stored groups, then ``served`` ones (APIGroups served without storage, as aggregated APIs come after
    the built-in groups in kube-apiserver's list)."""
    groups = [api_group(registry, g) for g in sorted(registry.group_versions) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g] + list(served)}


# --- aggregated discovery (apidiscovery.k8s.io) ------------------------------------------------------------------
AGGREGATED_VERSIONS = ("v2", "v2beta1")  # kubectl 1.30+ asks v2 first, 1.27–1.29 only v2beta1


def aggregated_version(accept: str | None) -> str | None:
    """The apidiscovery version the ``Accept`` header asks for first (``as=APIGroupDiscoveryList``), or None
    when the client wants the legacy documents."""
    for clause in (accept or "").split(","):
        params = dict(p.strip().split("=", 1) for p in clause.split(";")[1:] if "=" in p)
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io" and \
                params.get("v") in AGGREGATED_VERSIONS:
            return params["v"]
    return None


def aggregated_content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def aggregated(version: str, groups: Sequence[tuple[str, list[tuple[str, dict[str, Any]]]]]) -> dict[str, Any]:
    """An ``APIGroupDiscoveryList`` from the legacy documents: ``groups`` is [(group, [(version, its
    APIResourceList)])], preferred version first — so both forms always list the same resources."""
    items = [{"metadata": {"name": group, "creationTimestamp": None},
              "versions": [{"version": v, "resources": _aggregated_resources(group, v, listing),
                            "freshness": "Current"} for v, listing in versions]}
             for group, versions in groups]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {},
            "items": items}


def _aggregated_resources(group: str, version: str, listing: dict[str, Any]) -> list[dict[str, Any]]:
    resources: dict[str, dict[str, Any]] = {}
    for r in listing.get("resources") or []:
        name, _, sub = r["name"].partition("/")
        kind = {"group": r.get("group", group), "version": r.get("version", version), "kind": r.get("kind", "")}
        if not sub:
            entry: dict[str, Any] = {"resource": name, "responseKind": kind,
                                     "scope": "Namespaced" if r.get("namespaced") else "Cluster",
                                     "singularResource": r.get("singularName") or "", "verbs": r.get("verbs") or []}
            for key in ("shortNames", "categories"):
                if r.get(key):
                    entry[key] = r[key]
            resources[name] = {**entry, **({"subresources": resources[name]["subresources"]}
                                           if name in resources and "subresources" in resources[name] else {})}
        else:
            parent = resources.setdefault(name, {"resource": name})
            parent.setdefault("subresources", []).append({"subresource": sub, "responseKind": kind,
                                                          "verbs": r.get("verbs") or []})
    return [r for r in resources.values() if "verbs" in r]
