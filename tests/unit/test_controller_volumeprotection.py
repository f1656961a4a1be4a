"""controllers.volumeprotection over the FakeAPIServer: a deleted claim keeps kubernetes.io/pvc-protection while a
live pod names it; a deleted volume keeps kubernetes.io/pv-protection while it is Bound."""

from __future__ import annotations

from typing import Any

from controllers.manager import enabled_controllers
from controllers.volumeprotection import PVCProtectionController, PVProtectionController, uses_claim
from kubeclient import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, FakeAPIServer
from support.fakecontrollers import running, until


def pod(name: str, claim: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], "volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}, "status": {"phase": phase}}


def exists(fake: FakeAPIServer, resource: Any, name: str, namespace: str | None = None) -> bool:
    return any(o["metadata"]["name"] == name for o in fake.objects(resource, namespace))


def test_they_are_on_by_default_with_their_aliases() -> None:
    assert {"persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller"} <= set(
        enabled_controllers(["*"]))
    assert enabled_controllers(["pvc-protection", "pv-protection"]) == [
        "persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller"]


def test_a_finished_pod_no_longer_uses_its_claim() -> None:
    assert uses_claim(pod("p", "data"), "data") and not uses_claim(pod("p", "data", "Succeeded"), "data")
    assert not uses_claim(pod("p", "other"), "data")


async def test_a_claim_in_use_stays_until_its_pod_goes() -> None:
    async with running(PVCProtectionController) as (fake, cs):
        claims = cs.resource(PERSISTENT_VOLUME_CLAIMS)
        await claims.create({"metadata": {"name": "data", "finalizers": ["kubernetes.io/pvc-protection"]},
                             "spec": {}}, "default")
        await cs.pods.create(pod("user", "data"), "default")
        await claims.delete("data", "default")
        claim = next(o for o in fake.objects(PERSISTENT_VOLUME_CLAIMS, "default"))
        assert claim["metadata"]["deletionTimestamp"]
        await cs.pods.delete("user", "default", grace_period_seconds=0)
        await until(lambda: not exists(fake, PERSISTENT_VOLUME_CLAIMS, "data", "default"))


async def test_a_bound_volume_stays_until_released() -> None:
    async with running(PVProtectionController) as (fake, cs):
        volumes = cs.resource(PERSISTENT_VOLUMES)
        created = await volumes.create({"metadata": {"name": "pv1", "finalizers": ["kubernetes.io/pv-protection"]},
                                        "spec": {}})
        bound = await volumes.update_status({**created, "status": {"phase": "Bound"}})
        await volumes.delete("pv1")
        assert exists(fake, PERSISTENT_VOLUMES, "pv1")
        current = next(o for o in fake.objects(PERSISTENT_VOLUMES))
        await volumes.update_status({**current, "status": {**bound["status"], "phase": "Released"}})
        await until(lambda: not exists(fake, PERSISTENT_VOLUMES, "pv1"))
