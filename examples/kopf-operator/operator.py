"""A small kopf operator: each Greeting gets a ConfigMap ``<name>-greeting`` with its message, owned by it (so the
garbage collector deletes it with the Greeting), kept in step when the message changes, and reported in the
Greeting's status."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "example.kubelab.io", "v1", "greetings"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40
    kubernetes.config.load_kube_config()  # KUBECONFIG: the cluster's


def _configmap(name: str, message: str) -> dict[str, Any]:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-greeting"},
                 "data": {"message": message}}
    kopf.adopt(configmap)
    return configmap


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(spec: kopf.Spec, name: str, namespace: str, **_: Any) -> dict[str, Any]:
    created = kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, _configmap(name, spec["message"]))
    return {"configMap": created.metadata.name}


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.message")
def update_fn(new: str, name: str, namespace: str, **_: Any) -> dict[str, Any]:
    kubernetes.client.CoreV1Api().patch_namespaced_config_map(f"{name}-greeting", namespace,
                                                              {"data": {"message": new}})
    return {"configMap": f"{name}-greeting"}
