"""Custom resources and the controller-manager: the garbage collector follows ownerReferences to and from
custom resources (its monitors come from discovery), a deleted namespace is emptied of them, and a
HorizontalPodAutoscaler scales one through its ``/scale`` subresource."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.controllers import ControllerManager
from support.crds import CRDS, create_crd, crontab_crd, new_group
from support.wait import wait_for


@pytest.fixture(scope="module")
def group(api_url: str) -> Iterator[str]:
    name = new_group()
    with httpx.Client(base_url=api_url, timeout=30) as c:
        create_crd(c, crontab_crd(name))
        yield name
        c.delete(f"{CRDS}/crontabs.{name}")


@pytest.fixture(scope="module")
def manager(group: str, api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerManager]:
    """Started once the CRD is served, so the collector's first discovery finds it."""
    logs: Path = tmp_path_factory.mktemp("cm-customresources")
    cm = ControllerManager(api_url, logs / "controller-manager.log", "--leader-elect=false",
                           "--controllers=garbagecollector,namespace,horizontalpodautoscaling",
                           "--horizontal-pod-autoscaler-sync-period=1s")
    yield cm
    cm.stop()


def crontab(group: str, name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
    return {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": meta, "spec": {"cronSpec": "* * * * *"}}


def test_dependents_of_a_custom_resource_are_collected(client: httpx.Client, ns: str, group: str,
                                                       manager: ControllerManager) -> None:
    owner = client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs", json=crontab(group, "owner")).json()
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "child", "ownerReferences": [
        {"apiVersion": f"{group}/v1", "kind": "CronTab", "name": "owner", "uid": owner["metadata"]["uid"]}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json=child).status_code == 201
    nested = client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs", json=crontab(group, "nested", owner))
    assert nested.status_code == 201, nested.text
    assert client.delete(f"/apis/{group}/v1/namespaces/{ns}/crontabs/owner").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/configmaps/child").status_code == 404, 30,
             "the ConfigMap owned by the custom resource collected")
    wait_for(lambda: client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/nested").status_code == 404, 30,
             "the custom resource owned by the custom resource collected")


def test_custom_resources_owned_by_a_built_in_object_are_collected(client: httpx.Client, ns: str, group: str,
                                                                   manager: ControllerManager) -> None:
    owner = client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "owner"}}).json()
    owner.update(apiVersion="v1", kind="ConfigMap")
    assert client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs",
                       json=crontab(group, "dependent", owner)).status_code == 201
    assert client.delete(f"/api/v1/namespaces/{ns}/configmaps/owner").status_code == 200
    wait_for(lambda: client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/dependent").status_code == 404, 30,
             "the custom resource collected")


def test_a_deleted_namespace_is_emptied_of_custom_resources(client: httpx.Client, ns: str, group: str,
                                                            manager: ControllerManager) -> None:
    assert client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs", json=crontab(group, "a")).status_code == 201
    assert client.delete(f"/api/v1/namespaces/{ns}").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}").status_code == 404, 30, "the namespace gone")
    assert client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs").json()["items"] == []


def test_a_horizontal_pod_autoscaler_scales_a_custom_resource(client: httpx.Client, ns: str, group: str,
                                                              manager: ControllerManager) -> None:
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    assert client.post(base, json=crontab(group, "scaled")).status_code == 201
    client.patch(f"{base}/scaled/status", json={"status": {"replicas": 1, "selector": "app=scaled"}},
                 headers={"content-type": "application/merge-patch+json"})
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "scaled"},
           "spec": {"scaleTargetRef": {"apiVersion": f"{group}/v1", "kind": "CronTab", "name": "scaled"},
                    "minReplicas": 3, "maxReplicas": 5}}
    assert client.post(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers", json=hpa).status_code == 201
    wait_for(lambda: client.get(f"{base}/scaled").json()["spec"]["replicas"] == 3, 30,
             "the HPA to raise the custom resource to minReplicas")

    def able_to_scale() -> dict[str, Any] | None:  # the status is written after the scale
        hpa = client.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/scaled").json()
        return next((c for c in (hpa.get("status") or {}).get("conditions") or [] if c["type"] == "AbleToScale"),
                    None)

    able = wait_for(able_to_scale, 30, "the HPA's AbleToScale condition")
    assert able["status"] == "True" and able["reason"] in ("SucceededGetScale", "SucceededRescale",
                                                           "ReadyForNewScale")
