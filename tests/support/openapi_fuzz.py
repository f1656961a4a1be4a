"""The served OpenAPI v3 documents shaped for a bounded fuzz run (tests/chaos/test_openapi_fuzz.py).

The apiserver publishes one OpenAPI 3.0 document per group-version behind ``/openapi/v3``; schemathesis takes
one document, so the chosen group-versions are merged (their component names are kube's fully qualified type
names, so they never clash). Three edits keep a run bounded and inside the test's own namespace, and leave the
rest of each operation as served:

* the deprecated ``/watch/`` paths and the ``watch`` and ``follow`` query parameters go: they open streams that
  only end with their timeout, and the watch protocol has its own tests;
* the streaming subresources (``exec``, ``attach``, ``portforward``, ``proxy``) go: they upgrade the connection;
* every ``{namespace}`` path parameter is pinned to the test's namespace, so the fuzzer reaches the storage
  paths (a random namespace only ever meets a 404) and never touches another namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

STREAMING_SUBRESOURCES = ("/exec", "/attach", "/portforward", "/proxy")
DROPPED_PARAMETERS = frozenset({"watch", "follow"})
METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options"})


def served_documents(api_url: str, group_versions: list[str]) -> list[dict[str, Any]]:
    """The apiserver's OpenAPI v3 document of each group-version (``"api/v1"``, ``"apis/apps/v1"``)."""
    with httpx.Client(base_url=api_url, timeout=30) as client:
        index = client.get("/openapi/v3").json()["paths"]
        return [client.get(index[gv]["serverRelativeURL"]).json() for gv in group_versions]


def fuzz_document(documents: list[dict[str, Any]], namespace: str,
                  keep: Callable[[str, str], bool] = lambda method, path: True) -> dict[str, Any]:
    """One OpenAPI 3.0 document of the operations of ``documents`` that ``keep(method, path)`` selects, edited as
    the module docstring says."""
    merged: dict[str, Any] = {"openapi": "3.0.0", "info": {"title": "kubelab", "version": "fuzz"},
                              "paths": {}, "components": {"schemas": {}}}
    for document in documents:
        merged["components"]["schemas"].update(document.get("components", {}).get("schemas", {}))
        for path, item in document["paths"].items():
            if "/watch/" in path or path.endswith("/") or path.endswith(STREAMING_SUBRESOURCES):
                continue
            edited = {key: _edit(value, key, namespace) for key, value in item.items()
                      if key not in METHODS or keep(key, path)}
            if any(key in METHODS for key in edited):
                merged["paths"][path] = edited
    return merged


def operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """``(method, path)`` of every operation of ``document``, sorted."""
    return sorted((method, path) for path, item in document["paths"].items() for method in item if method in METHODS)


def _edit(value: Any, key: str, namespace: str) -> Any:
    """A path item's entry: its parameter lists (path-level, or an operation's) without streams, ns pinned."""
    if key == "parameters":
        return _parameters(value, namespace)
    if isinstance(value, dict) and "parameters" in value:
        return {**value, "parameters": _parameters(value["parameters"], namespace)}
    return value


def _parameters(parameters: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    kept = []
    for parameter in parameters:
        if parameter.get("name") in DROPPED_PARAMETERS:
            continue
        if parameter.get("in") == "path" and parameter.get("name") == "namespace":
            parameter = {**parameter, "schema": {"type": "string", "enum": [namespace]}}
        kept.append(parameter)
    return kept
