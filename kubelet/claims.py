"""A pod's PersistentVolumeClaims, resolved to the volumes that back them (kubelet's volume manager's
``desiredStateOfWorldPopulator``): claim → bound PersistentVolume, read from the API when the pod's volumes are
set up.

A claim that does not exist or is not bound yet, or whose volume is gone, fails the mount with kube's
``FailedMount`` text (``Unable to attach or mount volumes: unmounted volumes=[data], …: error processing PVC
ns/data: PVC is not bound``); the pod worker retries, so the pod waits in ``ContainerCreating`` until the binder
(and the provisioner) have done their part. ``volumes.persistent_volume_path`` turns the volume into a path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery import errors
from kubeclient import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, Clientset

from .volumes import VolumeError


async def _volume_of(client: Clientset, namespace: str, claim_name: str) -> dict[str, Any]:
    where = f"error processing PVC {namespace}/{claim_name}"
    try:
        claim = await client.resource(PERSISTENT_VOLUME_CLAIMS).get(claim_name, namespace)
    except errors.NotFound:
        raise VolumeError(f'{where}: persistentvolumeclaim "{claim_name}" not found') from None
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        raise VolumeError(f"{where}: can't start pod because PVC {namespace}/{claim_name} is being deleted")
    volume_name = (claim.get("spec") or {}).get("volumeName")
    if not volume_name or (claim.get("status") or {}).get("phase") != "Bound":
        raise VolumeError(f"{where}: PVC is not bound")
    try:
        volume: dict[str, Any] = await client.resource(PERSISTENT_VOLUMES).get(volume_name)
    except errors.NotFound:
        raise VolumeError(f'{where}: persistentvolume "{volume_name}" not found') from None
    return volume


async def resolve_claims(client: Clientset, pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Pod volume name → the PersistentVolume behind its claim; ``VolumeError`` naming every unready one."""
    namespace = pod["metadata"].get("namespace", "")
    found: dict[str, dict[str, Any]] = {}
    problems: list[tuple[str, str]] = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim")
        if source is None:
            continue
        try:
            found[volume["name"]] = await _volume_of(client, namespace, source.get("claimName", ""))
        except VolumeError as err:
            problems.append((volume["name"], str(err)))
    if problems:
        names = " ".join(name for name, _ in problems)
        raise VolumeError(f"Unable to attach or mount volumes: unmounted volumes=[{names}], unattached "
                          f"volumes=[{names}]: {problems[0][1]}")
    return found
