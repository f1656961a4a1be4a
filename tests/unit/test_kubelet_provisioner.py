"""kubelet.provisioner (kubelab.io/local-path) over the FakeAPIServer, and kubelet.claims/volumes: the kubelet of
the selected node makes the directory and the PV pre-bound to the claim, and removes both once the PV is
Released with reclaim policy Delete; a pod's claims resolve to their volumes' paths, or fail the mount."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kubeclient import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, Clientset, FakeAPIServer
from kubelet.claims import resolve_claims
from kubelet.provisioner import LocalPathProvisioner
from kubelet.volumes import VolumeError, persistent_volume_path
from support.fakecontrollers import until


def claim(selected: str) -> dict[str, Any]:
    return {"metadata": {"name": "data", "namespace": "default", "annotations": {
        "volume.kubernetes.io/storage-provisioner": "kubelab.io/local-path",
        "volume.kubernetes.io/selected-node": selected}},
        "spec": {"storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}}


async def test_the_selected_nodes_kubelet_provisions_and_deletes(tmp_path: Path) -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.resource(STORAGE_CLASSES).create({"metadata": {"name": "standard"}, "provisioner": "kubelab.io/local-path",
                                               "reclaimPolicy": "Delete"})
    stop = asyncio.Event()
    mine, other = LocalPathProvisioner(cs, "n1", tmp_path / "n1"), LocalPathProvisioner(cs, "n2", tmp_path / "n2")
    tasks = [asyncio.create_task(p.run(stop)) for p in (mine, other)]
    try:
        created = await cs.resource(PERSISTENT_VOLUME_CLAIMS).create(claim("n1"), "default")
        uid = created["metadata"]["uid"]
        await until(lambda: bool(fake.objects(PERSISTENT_VOLUMES)))
        pv = fake.objects(PERSISTENT_VOLUMES)[0]
        directory = tmp_path / "n1" / "local-path" / f"pvc-{uid}_default_data"
        assert pv["metadata"]["name"] == f"pvc-{uid}"
        assert pv["spec"]["hostPath"] == {"path": str(directory), "type": "DirectoryOrCreate"}
        assert pv["spec"]["claimRef"]["uid"] == uid
        assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["capacity"]) == ("Delete", {"storage": "1Gi"})
        assert directory.is_dir() and not (tmp_path / "n2" / "local-path").exists()

        await cs.resource(PERSISTENT_VOLUMES).update_status({**pv, "status": {"phase": "Released"}})
        await until(lambda: not fake.objects(PERSISTENT_VOLUMES))
        assert not directory.exists()
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def test_claims_resolve_to_their_bound_volumes_or_fail_the_mount(tmp_path: Path) -> None:
    cs = Clientset(FakeAPIServer())
    pod = {"metadata": {"name": "p", "namespace": "default"}, "spec": {"volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "tmp", "emptyDir": {}}]}}
    with pytest.raises(VolumeError) as missing:
        await resolve_claims(cs, pod)
    assert str(missing.value) == ('Unable to attach or mount volumes: unmounted volumes=[data], unattached '
                                  'volumes=[data]: error processing PVC default/data: persistentvolumeclaim "data" '
                                  "not found")
    created = await cs.resource(PERSISTENT_VOLUME_CLAIMS).create(claim("n1"), "default")
    with pytest.raises(VolumeError, match="error processing PVC default/data: PVC is not bound"):
        await resolve_claims(cs, pod)
    await cs.resource(PERSISTENT_VOLUMES).create({"metadata": {"name": "pv1"}, "spec": {
        "capacity": {"storage": "1Gi"}, "hostPath": {"path": str(tmp_path / "v"), "type": "DirectoryOrCreate"}}})
    await cs.resource(PERSISTENT_VOLUME_CLAIMS).update({**created, "spec": {**created["spec"], "volumeName": "pv1"}})
    bound = (await cs.resource(PERSISTENT_VOLUME_CLAIMS).get("data", "default"))
    await cs.resource(PERSISTENT_VOLUME_CLAIMS).update_status({**bound, "status": {"phase": "Bound"}})
    volumes = await resolve_claims(cs, pod)
    assert persistent_volume_path(volumes["data"]) == tmp_path / "v" and (tmp_path / "v").is_dir()
    with pytest.raises(VolumeError, match='path "/nonexistent/x" does not exist'):
        persistent_volume_path({"spec": {"local": {"path": "/nonexistent/x"}}})
