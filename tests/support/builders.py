"""Fluent builders for test objects: ``make_pod("a").label(app="web").node("n1").host_port(8080).obj``."""

from __future__ import annotations

import copy
from typing import Any


class PodBuilder:
    def __init__(self, name: str, image: str = "busybox") -> None:
        self.obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": image, "command": ["sleep", "3600"]}]},
        }

    def namespace(self, ns: str) -> PodBuilder:
        self.obj["metadata"]["namespace"] = ns
        return self

    def label(self, **labels: str) -> PodBuilder:
        self.obj["metadata"].setdefault("labels", {}).update(labels)
        return self

    def node(self, name: str) -> PodBuilder:
        self.obj["spec"]["nodeName"] = name
        return self

    def host_port(self, port: int) -> PodBuilder:
        self.obj["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
        return self

    def requests(self, **resources: str) -> PodBuilder:
        self.obj["spec"]["containers"][0].setdefault("resources", {})["requests"] = resources
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)


def make_pod(name: str, image: str = "busybox") -> PodBuilder:
    return PodBuilder(name, image)


def make_node(name: str, labels: dict[str, str] | None = None, cpu: str = "4", memory: str = "8Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def make_rc(name: str, replicas: int = 1, labels: dict[str, str] | None = None) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": labels,
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "main", "image": "busybox"}]}}},
    }
