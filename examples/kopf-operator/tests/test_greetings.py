"""What a user of the operator checks: a Greeting gets its ConfigMap, changes follow, deleting it cleans up."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from kubelab import Cluster
from kubelab.testing import Operator


def greeting(name: str, namespace: str, message: str) -> dict[str, Any]:
    return {"apiVersion": "example.kubelab.io/v1", "kind": "Greeting",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"message": message}}


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def greet(cluster: Cluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str,
          message: str) -> dict[str, Any]:
    """Create a Greeting; its ConfigMap once the operator has made it."""
    custom.create_namespaced_custom_object("example.kubelab.io", "v1", namespace, "greetings",
                                           greeting(name, namespace, message))
    made = cluster.wait_for(configmap(f"{name}-greeting", namespace), lambda cm: True, timeout=60)
    assert made is not None
    return made


@pytest.fixture()
def custom(kubelab_cluster: Cluster) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(kubelab_cluster.api_client())


def test_a_greeting_gets_its_configmap_and_status(kubelab_cluster: Cluster, kubelab_namespace: str,
                                                  operator: Operator,
                                                  custom: kubernetes.client.CustomObjectsApi) -> None:
    stored = greet(kubelab_cluster, custom, kubelab_namespace, "hello", "hello, world")
    assert stored["data"] == {"message": "hello, world"}
    assert [ref["kind"] for ref in stored["metadata"]["ownerReferences"]] == ["Greeting"]
    done = kubelab_cluster.wait_for(greeting("hello", kubelab_namespace, ""),
                                    "jsonpath={.status.create_fn.configMap}=hello-greeting", timeout=60)
    assert done is not None
    shown = kubelab_cluster.kubectl("get", "configmap", "hello-greeting", "-n", kubelab_namespace,
                                    "-o", "jsonpath={.data.message}")
    assert shown.stdout == "hello, world"


def test_a_changed_message_reaches_the_configmap(kubelab_cluster: Cluster, kubelab_namespace: str,
                                                 operator: Operator,
                                                 custom: kubernetes.client.CustomObjectsApi) -> None:
    greet(kubelab_cluster, custom, kubelab_namespace, "hi", "hi")
    custom.patch_namespaced_custom_object("example.kubelab.io", "v1", kubelab_namespace, "greetings", "hi",
                                          {"spec": {"message": "hi again"}})
    kubelab_cluster.wait_for(configmap("hi-greeting", kubelab_namespace),
                             lambda cm: cm.get("data", {}).get("message") == "hi again", timeout=60)


def test_deleting_a_greeting_deletes_its_configmap(kubelab_cluster: Cluster, kubelab_namespace: str,
                                                   operator: Operator,
                                                   custom: kubernetes.client.CustomObjectsApi) -> None:
    greet(kubelab_cluster, custom, kubelab_namespace, "bye", "bye")
    custom.delete_namespaced_custom_object("example.kubelab.io", "v1", kubelab_namespace, "greetings", "bye")
    kubelab_cluster.wait_for(configmap("bye-greeting", kubelab_namespace), "delete", timeout=60)
