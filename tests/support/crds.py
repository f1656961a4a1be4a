"""CustomResourceDefinitions for integration tests: a CronTab CRD (kube's documentation example, with a schema
that exercises validation, defaulting, list types, status and scale) in a group of its own per test."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import httpx

from support.wait import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crontab_crd(group: str, *, scope: str = "Namespaced", extra_version: bool = False) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "cronSpec": {"type": "string", "pattern": r"^(\S+ ){4}\S+$"},
            "image": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                     "selector": {"type": "string"}}}}}
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                        "statusReplicasPath": ".status.replicas",
                                                        "labelSelectorPath": ".status.selector"}},
               "selectableFields": [{"jsonPath": ".spec.color"}],
               "additionalPrinterColumns": [
                   {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                   {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                   {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}
    versions = [version]
    if extra_version:
        beta = copy.deepcopy(version)
        beta.update(name="v1beta1", storage=False, deprecated=True)
        versions.append(beta)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"crontabs.{group}"},
            "spec": {"group": group, "scope": scope, "versions": versions,
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"],
                               "categories": ["all"]}}}


def new_group() -> str:
    return f"g{uuid.uuid4().hex[:8]}.example.com"


def established(client: httpx.Client, name: str) -> bool:
    crd = client.get(f"{CRDS}/{name}").json()
    return any(c["type"] == "Established" and c["status"] == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def create_crd(client: httpx.Client, crd: dict[str, Any]) -> dict[str, Any]:
    resp = client.post(CRDS, json=crd)
    assert resp.status_code == 201, resp.text
    name = crd["metadata"]["name"]
    wait_for(lambda: established(client, name), 10, f"{name} Established")
    group = crd["spec"]["group"]
    wait_for(lambda: client.get(f"/apis/{group}/v1").status_code == 200, 10, f"{group}/v1 served")
    return resp.json()
