"""The PersistentVolume binder (``pkg/controller/volume/persistentvolume``, kube's ``persistentvolume-binder``).

One queue holds claim keys (``claim:<ns>/<name>``) and volume keys (``volume:<name>``); handlers only enqueue.

``sync`` of a claim (``syncClaim``):

* unbound (no ``spec.volumeName``): the best matching volume (``apimachinery.volumes.find_matching_volume``) is
  bound to it. Without one: a ``WaitForFirstConsumer`` class waits for the scheduler's
  ``volume.kubernetes.io/selected-node`` (event ``WaitForFirstConsumer``); once a node is selected a static volume
  whose node affinity admits it is taken first (kube leaves that to the scheduler's PreBind; here the binder does
  it, with the same matching); else a class with a provisioner gets the claim annotated
  ``volume.kubernetes.io/storage-provisioner`` (and the beta name) and the ``ExternalProvisioning`` event — the
  provisioner (for ``kubelab.io/local-path``, the kubelet of the selected node: ``kubelet.provisioner``) creates
  a volume pre-bound to the claim, which the next sync binds; without a class, ``FailedBinding``;
* bound: the volume is gone → phase ``Lost`` and ``ClaimLost``; bound to another claim → ``ClaimMisbound``;
  otherwise the binding is completed (idempotent, every write only when something differs).

Besides the handlers, every claim and volume is synced again every 15 s (``--pvclaimbinder-sync-period``).

Binding (``bind``) writes in kube's order: the volume's ``claimRef`` (annotated ``bound-by-controller``), its
phase ``Bound``, the claim's ``volumeName`` (annotated ``bind-completed``), the claim's status (``Bound``,
access modes and capacity from the volume).

``sync`` of a volume (``syncVolume``): no claimRef → ``Available``; its claim waiting for it → ``Available``;
its claim bound to it → ``Bound``; its claim gone (checked against the API, not only the cache, as kube does)
→ ``Released`` and reclaimed: ``Retain`` keeps it; ``Delete`` of a dynamically provisioned volume is the
provisioner's job (the kubelet of the volume's node deletes the directory and the object); other ``Delete`` and
``Recycle`` volumes have no plugin here: ``VolumeFailedDelete``/``VolumeFailedRecycle`` and phase ``Failed``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from apimachinery import errors
from apimachinery.meta import Object
from apimachinery.volumes import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    claim_key,
    claim_ref,
    find_matching_volume,
    is_bound_to,
    is_delay_binding,
    storage_class_of,
)
from controllers.support.base import Controller, unwrap
from controllers.support.podutil import meta
from kubeclient import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Clientset,
    DeletedFinalStateUnknown,
    EventRecorder,
    InformerFactory,
)

log = logging.getLogger(__name__)

CLAIM, VOLUME = "claim:", "volume:"
SYNC_PERIOD = 15.0  # kube-controller-manager's --pvclaimbinder-sync-period


def external_provisioning_message(provisioner: str) -> str:
    return (f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by "
            "the system administrator. If volume creation is delayed, please verify that the provisioner is running "
            "and correctly registered.")


def phase(obj: Object) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


class PersistentVolumeController(Controller):
    name = "persistentvolume-binder-controller"
    queue_name = "volumes"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 1,
                 sync_period: float = SYNC_PERIOD) -> None:
        super().__init__(workers=workers)
        self.sync_period = sync_period
        self.volumes = clientset.resource(PERSISTENT_VOLUMES)
        self.claims = clientset.resource(PERSISTENT_VOLUME_CLAIMS)
        self.recorder = EventRecorder(clientset.events, "persistentvolume-controller")
        self.volume_informer = factory.informer(PERSISTENT_VOLUMES)
        self.claim_informer = factory.informer(PERSISTENT_VOLUME_CLAIMS)
        self.class_informer = factory.informer(STORAGE_CLASSES)
        self.node_informer = factory.informer(NODES)
        self.informers = [self.volume_informer, self.claim_informer, self.class_informer, self.node_informer]
        self.volume_informer.add_event_handler(self._volume_changed, lambda old, new: self._volume_changed(new),
                                               self._volume_changed)
        self.claim_informer.add_event_handler(self._claim_changed, lambda old, new: self._claim_changed(new),
                                              self._claim_deleted)
        self.class_informer.add_event_handler(self._class_added)

    # --- handlers -------------------------------------------------------------------------------------------------
    def _volume_changed(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """A volume's own sync, and its claim's; a free volume may serve the unbound claims of its class (kube
        finds them at the next resync; they are looked at now)."""
        volume = unwrap(obj)
        self.queue.add(VOLUME + meta(volume).get("name", ""))
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref:
            self.queue.add(f"{CLAIM}{ref.get('namespace', '')}/{ref.get('name', '')}")
            return
        wanted = storage_class_of(volume)
        for claim in self.claim_informer.store.list():
            if not (claim.get("spec") or {}).get("volumeName") and storage_class_of(claim) == wanted:
                self._claim_changed(claim)

    def background(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._resync(), name="persistentvolume resync")]

    async def _resync(self) -> None:
        """Every claim and volume again each ``sync_period`` (``--pvclaimbinder-sync-period``, 15 s)."""
        while True:
            await asyncio.sleep(self.sync_period)
            for claim in self.claim_informer.store.list():
                self._claim_changed(claim)
            for volume in self.volume_informer.store.list():
                self.queue.add(VOLUME + meta(volume).get("name", ""))

    def _claim_changed(self, claim: Object) -> None:
        self.queue.add(CLAIM + claim_key(claim))

    def _claim_deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """A claim gone releases its volume: sync the volumes bound to it."""
        claim = unwrap(obj)
        for volume in self.volume_informer.store.list():
            if is_bound_to(volume, claim):
                self.queue.add(VOLUME + meta(volume)["name"])

    def _class_added(self, storage_class: Object) -> None:
        """Claims waiting for a class that did not exist yet get another look."""
        name = meta(storage_class).get("name")
        for claim in self.claim_informer.store.list():
            if not (claim.get("spec") or {}).get("volumeName") and storage_class_of(claim) == name:
                self._claim_changed(claim)

    # --- sync -----------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(CLAIM):
            claim = self.claim_informer.store.get_by_key(key[len(CLAIM):])
            if claim is not None and not meta(claim).get("deletionTimestamp"):
                await self.sync_claim(claim)
        elif key.startswith(VOLUME):
            volume = self.volume_informer.store.get_by_key(key[len(VOLUME):])
            if volume is not None:
                await self.sync_volume(volume)

    async def sync_claim(self, claim: Object) -> None:
        if (claim.get("spec") or {}).get("volumeName"):
            await self._sync_bound_claim(claim)
        else:
            await self._sync_unbound_claim(claim)

    async def _sync_unbound_claim(self, claim: Object) -> None:
        class_name = storage_class_of(claim)
        storage_class = self.class_informer.store.get_by_key(class_name) if class_name else None
        delay = is_delay_binding(storage_class)
        selected = (meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
        node = self.node_informer.store.get_by_key(selected) if selected else None
        volume = find_matching_volume(claim, self.volume_informer.store.list(), node if delay else None, delay)
        if volume is not None:
            await self.bind(dict(volume), claim)  # the informer's read-only object: bind copies before writing
            return
        if delay and not selected:
            self.recorder.event(claim, "Normal", "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
        elif storage_class is not None and storage_class.get("provisioner"):
            await self._wait_for_provisioner(claim, str(storage_class["provisioner"]))
        elif class_name and storage_class is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found')
        else:
            self.recorder.event(claim, "Warning", "FailedBinding",
                                "no persistent volumes available for this claim and no storage class is set")
        await self._set_claim_phase(claim, "Pending")

    async def _wait_for_provisioner(self, claim: Object, provisioner: str) -> None:
        """``provisionClaim`` for an external provisioner: annotate the claim and say who is expected."""
        annotations = meta(claim).get("annotations") or {}
        if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:  # an update, as kube's setClaimProvisioner
            await self.claims.update({**claim, "metadata": {**meta(claim), "annotations": {
                **annotations, ANN_STORAGE_PROVISIONER: provisioner, ANN_BETA_STORAGE_PROVISIONER: provisioner}}})
        self.recorder.event(claim, "Normal", "ExternalProvisioning", external_provisioning_message(provisioner))

    async def _sync_bound_claim(self, claim: Object) -> None:
        name = claim["spec"]["volumeName"]
        volume = self.volume_informer.store.get_by_key(name)
        if volume is None:
            if phase(claim) == "Bound":
                self.recorder.event(claim, "Warning", "ClaimLost",
                                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
                await self._set_claim_phase(claim, "Lost")
            elif phase(claim) != "Lost":
                self.recorder.event(claim, "Warning", "FailedBinding", f'volume "{name}" not found')
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref and not is_bound_to(volume, claim):
            if phase(claim) == "Bound":
                self.recorder.event(claim, "Warning", "ClaimMisbound",
                                    "Two claims are bound to the same volume, this one is bound incorrectly")
                await self._set_claim_phase(claim, "Lost")
            else:
                self.recorder.event(claim, "Warning", "FailedBinding",
                                    f'volume "{name}" already bound to a different claim.')
            return
        await self.bind(volume, claim)

    # --- binding --------------------------------------------------------------------------------------------------
    async def bind(self, volume: Object, claim: Object) -> None:
        """``bind``: volume → claim, then claim → volume, each half written only when it differs."""
        volume = await self._bind_volume(volume, claim)
        claim = await self._bind_claim(claim, volume)
        log.info("bound claim %s to volume %s", claim_key(claim), meta(volume)["name"])

    async def _bind_volume(self, volume: Object, claim: Object) -> Object:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != meta(claim).get("uid") or ref.get("name") != meta(claim).get("name"):
            new = copy.deepcopy(volume)
            new["spec"]["claimRef"] = claim_ref(claim)
            new["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            volume = await self.volumes.update(new)
        if phase(volume) != "Bound":
            volume = await self._set_volume_phase(volume, "Bound")
        return volume

    async def _bind_claim(self, claim: Object, volume: Object) -> Object:
        annotations = meta(claim).get("annotations") or {}
        name = meta(volume)["name"]
        if (claim.get("spec") or {}).get("volumeName") != name or annotations.get(ANN_BIND_COMPLETED) != "yes":
            new = copy.deepcopy(claim)
            added = {ANN_BIND_COMPLETED: "yes"}
            if new["spec"].get("volumeName") != name:
                added[ANN_BOUND_BY_CONTROLLER] = "yes"
                new["spec"]["volumeName"] = name
            new["metadata"]["annotations"] = {**annotations, **added}
            claim = await self.claims.update(new)
        spec = volume.get("spec") or {}
        status = {**(claim.get("status") or {}), "phase": "Bound", "accessModes": spec.get("accessModes") or []}
        if phase(claim) != "Bound":
            # The capacity only as the claim becomes Bound (kube's updateClaimStatus): afterwards a volume larger
            # than the claim's status is an expansion the expander has not finished, which it must see and report.
            status["capacity"] = dict(spec.get("capacity") or {})
        if status != claim.get("status"):
            claim = await self.claims.update_status({**claim, "status": status})
        return claim

    async def _set_claim_phase(self, claim: Object, new_phase: str) -> None:
        if phase(claim) != new_phase:
            await self.claims.update_status({**claim, "status": {**(claim.get("status") or {}), "phase": new_phase}})

    async def _set_volume_phase(self, volume: Object, new_phase: str, reason: str = "", message: str = ""
                                ) -> Object:
        status = {**(volume.get("status") or {}), "phase": new_phase}
        for field, value in (("reason", reason), ("message", message)):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        return await self.volumes.update_status({**volume, "status": status})

    # --- volumes --------------------------------------------------------------------------------------------------
    async def sync_volume(self, volume: Object) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref:
            if phase(volume) in ("", "Pending", "Bound"):
                await self._set_volume_phase(volume, "Available")
            return
        key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
        claim = self.claim_informer.store.get_by_key(key)
        if claim is None or (ref.get("uid") and meta(claim).get("uid") != ref.get("uid")):
            claim = await self._claim_from_api(ref)
        if not ref.get("uid"):
            if phase(volume) != "Available":
                await self._set_volume_phase(volume, "Available")  # pre-bound by name: waits for its claim
            return
        if claim is None or meta(claim).get("uid") != ref.get("uid"):
            await self._release(volume)
            return
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if not volume_name and phase(volume) not in ("Available", "Bound"):
            await self._set_volume_phase(volume, "Available")  # a provisioned volume waiting for its claim
        elif volume_name == meta(volume)["name"] and phase(volume) != "Bound":
            await self._set_volume_phase(volume, "Bound")

    async def _claim_from_api(self, ref: dict[str, Any]) -> Object | None:
        try:
            return await self.claims.get(ref.get("name", ""), ref.get("namespace", ""))
        except errors.NotFound:
            return None

    async def _release(self, volume: Object) -> None:
        """The claim is gone: ``Released``, then ``reclaimVolume`` by the volume's policy."""
        if phase(volume) not in ("Released", "Failed"):
            volume = await self._set_volume_phase(volume, "Released")
        if phase(volume) == "Failed":
            return
        policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        provisioner = (meta(volume).get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED)
        if policy == "Retain":
            return
        if policy == "Delete" and provisioner:
            self.recorder.event(volume, "Normal", "ExternalDeleting",
                                f"Waiting for a volume to be deleted either by the external provisioner "
                                f"'{provisioner}' or manually by the system administrator.")
            return
        if policy == "Delete":
            message = (f'error getting deleter volume plugin for volume "{meta(volume)["name"]}": no deletable '
                       "volume plugin matched")
            self.recorder.event(volume, "Warning", "VolumeFailedDelete", message)
        else:
            message = "No recycler plugin found for the volume!"
            self.recorder.event(volume, "Warning", "VolumeFailedRecycle", message)
        await self._set_volume_phase(volume, "Failed", message=message)
