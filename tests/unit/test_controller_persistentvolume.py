"""controllers.persistentvolume over the FakeAPIServer: binding a claim to the smallest matching volume, waiting
for the first consumer, asking the provisioner, pre-bound volumes, claims lost, and reclaiming released volumes."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.manager import enabled_controllers
from controllers.persistentvolume import PersistentVolumeController
from kubeclient import (
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Clientset,
    FakeAPIServer,
    InformerFactory,
)
from support.fakecontrollers import running, until


def make(cs: Clientset, factory: InformerFactory) -> PersistentVolumeController:
    return PersistentVolumeController(cs, factory)


def pv(name: str, size: str = "1Gi", storage_class: str = "", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                                                 "storageClassName": storage_class, "hostPath": {"path": "/x"},
                                                 "persistentVolumeReclaimPolicy": "Retain", **spec}}


def pvc(name: str, size: str = "1Gi", storage_class: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                                                 "resources": {"requests": {"storage": size}}}}


def get(fake: FakeAPIServer, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
    return next((o for o in fake.objects(resource, namespace) if o["metadata"]["name"] == name), {})


def phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def reasons(fake: FakeAPIServer) -> set[str]:
    return {e.get("reason", "") for e in fake.objects(EVENTS)}


def test_it_is_on_by_default_with_its_alias() -> None:
    assert "persistentvolume-binder-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["persistentvolume-binder"]) == ["persistentvolume-binder-controller"]


async def test_an_immediate_claim_binds_the_smallest_volume_that_fits() -> None:
    async with running(make) as (fake, cs):
        volumes = cs.resource(PERSISTENT_VOLUMES)
        for volume in (pv("big", "10Gi"), pv("small", "2Gi"), pv("tiny", "100Mi")):
            await volumes.create(volume)
        await cs.resource(PERSISTENT_VOLUME_CLAIMS).create(pvc("data"), "default")
        await until(lambda: phase(get(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default")) == "Bound")
        claim = get(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default")
        assert claim["spec"]["volumeName"] == "small"
        assert claim["metadata"]["annotations"] == {"pv.kubernetes.io/bind-completed": "yes",
                                                    "pv.kubernetes.io/bound-by-controller": "yes"}
        assert claim["status"]["capacity"] == {"storage": "2Gi"}
        small = get(fake, PERSISTENT_VOLUMES, "small")
        assert phase(small) == "Bound" and small["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        await until(lambda: phase(get(fake, PERSISTENT_VOLUMES, "big")) == "Available")

        # A bound claim's capacity is the expander's to change: a grown volume does not overwrite it.
        grown = get(fake, PERSISTENT_VOLUMES, "small")
        grown["spec"]["capacity"] = {"storage": "3Gi"}
        await volumes.update(grown)
        await asyncio.sleep(0.5)  # the binder syncs the claim of a changed volume at once
        assert get(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default")["status"]["capacity"] == {"storage": "2Gi"}

        # The claim goes: its Retain volume is Released and stays.
        await cs.resource(PERSISTENT_VOLUME_CLAIMS).delete("data", "default")
        await until(lambda: phase(get(fake, PERSISTENT_VOLUMES, "small")) == "Released")


async def test_delayed_and_provisioned_claims_wait_with_kubes_events() -> None:
    async with running(make) as (fake, cs):
        classes = cs.resource(STORAGE_CLASSES)
        await classes.create({"metadata": {"name": "local"}, "provisioner": "kubelab.io/local-path",
                              "volumeBindingMode": "WaitForFirstConsumer"})
        await classes.create({"metadata": {"name": "fast"}, "provisioner": "example.com/fast",
                              "volumeBindingMode": "Immediate"})
        claims = cs.resource(PERSISTENT_VOLUME_CLAIMS)
        await claims.create(pvc("later", storage_class="local"), "default")
        await claims.create(pvc("now", storage_class="fast"), "default")
        await claims.create(pvc("none"), "default")
        await until(lambda: {"WaitForFirstConsumer", "ExternalProvisioning", "FailedBinding"} <= reasons(fake))
        assert "storage-provisioner" not in str(get(fake, PERSISTENT_VOLUME_CLAIMS, "later", "default")["metadata"])
        annotations = get(fake, PERSISTENT_VOLUME_CLAIMS, "now", "default")["metadata"]["annotations"]
        assert annotations["volume.kubernetes.io/storage-provisioner"] == "example.com/fast"

        # The scheduler picks a node: the provisioner is asked; its volume, pre-bound to the claim, is bound.
        await claims.patch("later", {"metadata": {"annotations": {
            "volume.kubernetes.io/selected-node": "n1"}}}, namespace="default")
        await until(lambda: "volume.kubernetes.io/storage-provisioner" in (
            get(fake, PERSISTENT_VOLUME_CLAIMS, "later", "default")["metadata"].get("annotations") or {}))
        later = get(fake, PERSISTENT_VOLUME_CLAIMS, "later", "default")
        await cs.resource(PERSISTENT_VOLUMES).create(pv("pvc-1", storage_class="local", claimRef={
            "namespace": "default", "name": "later", "uid": later["metadata"]["uid"]}))
        await until(lambda: phase(get(fake, PERSISTENT_VOLUME_CLAIMS, "later", "default")) == "Bound")


async def test_a_lost_volume_and_a_static_delete_volume_without_a_deleter() -> None:
    async with running(make) as (fake, cs):
        await cs.resource(PERSISTENT_VOLUMES).create(pv("gone", persistentVolumeReclaimPolicy="Delete"))
        await cs.resource(PERSISTENT_VOLUME_CLAIMS).create(pvc("data"), "default")
        await until(lambda: phase(get(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default")) == "Bound")
        await cs.resource(PERSISTENT_VOLUMES).delete("gone")
        await until(lambda: phase(get(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default")) == "Lost")
        assert "ClaimLost" in reasons(fake)

        await cs.resource(PERSISTENT_VOLUMES).create(pv("orphan", persistentVolumeReclaimPolicy="Delete", claimRef={
            "namespace": "default", "name": "nobody", "uid": "u-nobody"}))
        await until(lambda: phase(get(fake, PERSISTENT_VOLUMES, "orphan")) == "Failed")
        assert "VolumeFailedDelete" in reasons(fake)
