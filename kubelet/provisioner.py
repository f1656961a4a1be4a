"""The built-in ``kubelab.io/local-path`` provisioner, run by every (non-hollow) kubelet for its own node.

In the spirit of kind's local-path provisioner: a volume is a directory on one node, and the PV says so with node
affinity. The kubelet does the work because only it knows its data directory, and the directory must be made on
the node where the pod will run:

* provisioning: a claim of a ``kubelab.io/local-path`` class that the PV binder annotated
  ``volume.kubernetes.io/storage-provisioner: kubelab.io/local-path`` and the scheduler
  ``volume.kubernetes.io/selected-node: <this node>`` gets the directory
  ``<root-dir>/local-path/pvc-<claim uid>_<namespace>_<claim>`` (mode 0777) and a PV ``pvc-<claim uid>``:
  ``hostPath`` of that directory (type ``DirectoryOrCreate``), node affinity ``kubernetes.io/hostname In
  [<node>]``, the claim's size, access modes and volume mode, the class's reclaim policy, annotated
  ``pv.kubernetes.io/provisioned-by: kubelab.io/local-path`` and pre-bound to the claim (``claimRef`` with its
  UID), which the binder then binds. Events on the claim: ``Provisioning``, ``ProvisioningSucceeded`` (or
  ``ProvisioningFailed``), as kube's external-provisioner words them;
* deletion: a ``Released`` PV of this provisioner with reclaim policy ``Delete`` whose directory lies under this
  kubelet's root has its directory removed, then the PV deleted (``Retain`` keeps both).

Claims without a selected node (an ``Immediate`` class) are provisioned by the kubelet of the first node in name
order that is Ready, so exactly one kubelet acts; the volume is then pinned to that node.

Work goes through a rate-limited queue of ``claim:<ns>/<name>`` and ``volume:<name>`` keys, so a failure is
retried with backoff and every action is idempotent (a kubelet restart relists and finds nothing left to do).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from pathlib import Path
from typing import Any

from apimachinery import errors
from apimachinery.volumes import (
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    claim_key,
    claim_ref,
    storage_class_of,
)
from kubeclient import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Clientset,
    RateLimitingQueue,
)
from kubeclient.events import EventRecorder
from kubeclient.informer import SharedInformer

log = logging.getLogger(__name__)

PROVISIONER = "kubelab.io/local-path"
HOSTNAME_LABEL = "kubernetes.io/hostname"
CLAIM, VOLUME = "claim:", "volume:"
MAX_RETRIES = 15
Object = dict[str, Any]


def _meta(obj: Object) -> dict[str, Any]:
    return obj.get("metadata") or {}


def volume_name(claim: Object) -> str:
    return f"pvc-{_meta(claim).get('uid', '')}"


def volume_dir(root_dir: Path, claim: Object) -> Path:
    meta = _meta(claim)
    return root_dir / "local-path" / f"{volume_name(claim)}_{meta.get('namespace', '')}_{meta.get('name', '')}"


def provisioned_volume(claim: Object, storage_class: Object, node: str, path: Path) -> Object:
    """The PV for ``claim`` on ``node`` at ``path`` (see the module docstring)."""
    spec = claim.get("spec") or {}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name(claim), "annotations": {ANN_DYNAMICALLY_PROVISIONED: PROVISIONER,
                                                                 ANN_SELECTED_NODE: node}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": list(spec.get("accessModes") or []),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": _meta(storage_class).get("name", ""),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}},
            "claimRef": claim_ref(claim),
        },
    }


def _ready(node: Object) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


class LocalPathProvisioner:
    """See the module docstring."""

    def __init__(self, client: Clientset, node_name: str, root_dir: Path) -> None:
        self.node_name = node_name
        self.root_dir = root_dir
        self.claims = client.resource(PERSISTENT_VOLUME_CLAIMS)
        self.volumes = client.resource(PERSISTENT_VOLUMES)
        self.classes = client.resource(STORAGE_CLASSES)
        self.recorder = EventRecorder(client.events, f"{PROVISIONER}_{node_name}")
        self.claim_informer = SharedInformer(self.claims)
        self.volume_informer = SharedInformer(self.volumes)
        self.node_informer = SharedInformer(client.resource(NODES))
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="local-path-provisioner")
        self.claim_informer.add_event_handler(self._claim_changed, lambda old, new: self._claim_changed(new))
        self.volume_informer.add_event_handler(self._volume_changed, lambda old, new: self._volume_changed(new))

    def _claim_changed(self, claim: Object) -> None:
        if (_meta(claim).get("annotations") or {}).get(ANN_STORAGE_PROVISIONER) == PROVISIONER:
            self.queue.add(CLAIM + claim_key(claim))

    def _volume_changed(self, volume: Object) -> None:
        if (_meta(volume).get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED) == PROVISIONER:
            self.queue.add(VOLUME + _meta(volume).get("name", ""))

    # --- provisioning ---------------------------------------------------------------------------------------------
    def _chosen_node(self, claim: Object) -> str | None:
        selected = (_meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected:
            return str(selected)
        ready = sorted(_meta(n).get("name", "") for n in self.node_informer.store.list() if _ready(n))
        return ready[0] if ready else None

    async def provision(self, claim: Object) -> None:
        spec = claim.get("spec") or {}
        if spec.get("volumeName") or _meta(claim).get("deletionTimestamp") or \
                self._chosen_node(claim) != self.node_name:
            return
        if self.volume_informer.store.get_by_key(volume_name(claim)) is not None:
            return
        try:
            storage_class = await self.classes.get(storage_class_of(claim))
        except errors.NotFound:
            return
        if storage_class.get("provisioner") != PROVISIONER:
            return
        self.recorder.event(claim, "Normal", "Provisioning",
                            f'External provisioner is provisioning volume for claim "{claim_key(claim)}"')
        path = volume_dir(self.root_dir, claim)
        try:
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
        except OSError as err:
            class_name = _meta(storage_class).get("name", "")
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'failed to provision volume with StorageClass "{class_name}": {err}')
            raise
        try:
            await self.volumes.create(provisioned_volume(claim, storage_class, self.node_name, path))
        except errors.AlreadyExists:
            return
        self.recorder.event(claim, "Normal", "ProvisioningSucceeded",
                            f"Successfully provisioned volume {volume_name(claim)}")
        log.info("provisioned %s for claim %s at %s", volume_name(claim), claim_key(claim), path)

    # --- deletion -------------------------------------------------------------------------------------------------
    def _owned_path(self, volume: Object) -> Path | None:
        path = ((volume.get("spec") or {}).get("hostPath") or {}).get("path")
        if not path:
            return None
        candidate = Path(path)
        return candidate if candidate.parent == self.root_dir / "local-path" else None

    async def delete(self, volume: Object) -> None:
        spec = volume.get("spec") or {}
        path = self._owned_path(volume)
        if path is None or (volume.get("status") or {}).get("phase") != "Released" or \
                spec.get("persistentVolumeReclaimPolicy") != "Delete" or _meta(volume).get("deletionTimestamp"):
            return
        shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(errors.NotFound):
            await self.volumes.delete(_meta(volume)["name"], preconditions={"uid": _meta(volume)["uid"]})
        log.info("deleted volume %s and its directory %s", _meta(volume)["name"], path)

    # --- the loop -------------------------------------------------------------------------------------------------
    async def _sync(self, key: str) -> None:
        if key.startswith(CLAIM):
            claim = self.claim_informer.store.get_by_key(key[len(CLAIM):])
            if claim is not None:
                await self.provision(claim)
        else:
            volume = self.volume_informer.store.get_by_key(key[len(VOLUME):])
            if volume is not None:
                await self.delete(volume)

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self._sync(key)
            except (errors.StatusError, OSError) as err:
                if self.queue.num_requeues(key) < MAX_RETRIES:
                    log.info("local-path %s: %s (retried)", key, err)
                    self.queue.add_rate_limited(key)
                else:
                    self.queue.forget(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    async def run(self, stop: asyncio.Event) -> None:
        informers = [asyncio.create_task(i.run(stop))
                     for i in (self.claim_informer, self.volume_informer, self.node_informer)]
        worker = asyncio.create_task(self._worker(), name="local-path provisioner")
        await stop.wait()
        self.queue.shut_down()
        worker.cancel()
        await asyncio.gather(*informers, worker, return_exceptions=True)
        await self.recorder.close()
