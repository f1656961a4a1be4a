"""The volume expander (``pkg/controller/volume/expand``, kube's ``persistentvolume-expander``).

A bound claim whose ``spec.resources.requests.storage`` grew past ``status.capacity.storage`` (the
PersistentVolumeClaimResize admission lets it grow only where the class has ``allowVolumeExpansion``) is
expanded. A directory (``hostPath``/``local``, which ``kubelab.io/local-path`` provisions) has no size to grow,
so expansion is a status change, as an in-tree plugin without a node step would do: the volume's
``spec.capacity`` first, then the claim's ``status.capacity``, and the ``VolumeResizeSuccessful`` event. Other
volumes belong to an external resizer: the claim is annotated ``volume.kubernetes.io/storage-resizer`` with the
volume's CSI driver and ``ExternalExpanding`` says so.
"""

from __future__ import annotations

import copy

from apimachinery.meta import Object
from apimachinery.quantity import parse_quantity
from apimachinery.volumes import claim_key, requested_storage, storage_class_of
from controllers.support.base import Controller
from controllers.support.podutil import meta
from kubeclient import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Clientset,
    EventRecorder,
    InformerFactory,
)

ANN_STORAGE_RESIZER = "volume.kubernetes.io/storage-resizer"


def needs_expansion(claim: Object) -> bool:
    status = claim.get("status") or {}
    if status.get("phase") != "Bound" or not (claim.get("spec") or {}).get("volumeName"):
        return False
    current = (status.get("capacity") or {}).get("storage")
    return current is not None and requested_storage(claim) > parse_quantity(current)


class ExpandController(Controller):
    name = "persistentvolume-expander-controller"
    queue_name = "volume_expand"

    def __init__(self, clientset: Clientset, factory: InformerFactory) -> None:
        super().__init__()
        self.claims = clientset.resource(PERSISTENT_VOLUME_CLAIMS)
        self.volumes = clientset.resource(PERSISTENT_VOLUMES)
        self.recorder = EventRecorder(clientset.events, "volume_expand")
        self.claim_informer = factory.informer(PERSISTENT_VOLUME_CLAIMS)
        self.volume_informer = factory.informer(PERSISTENT_VOLUMES)
        self.class_informer = factory.informer(STORAGE_CLASSES)
        self.informers = [self.claim_informer, self.volume_informer, self.class_informer]
        self.claim_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        claim = self.claim_informer.store.get_by_key(key)
        if claim is None or not needs_expansion(claim):
            return
        storage_class = self.class_informer.store.get_by_key(storage_class_of(claim))
        volume = self.volume_informer.store.get_by_key(claim["spec"]["volumeName"])
        if volume is None or storage_class is None or not storage_class.get("allowVolumeExpansion"):
            return
        spec = volume.get("spec") or {}
        if spec.get("hostPath") is None and spec.get("local") is None:
            driver = (spec.get("csi") or {}).get("driver") or storage_class.get("provisioner", "")
            if (meta(claim).get("annotations") or {}).get(ANN_STORAGE_RESIZER) != driver:
                # Through the status subresource, as kube's SetClaimResizer: its role patches claims' status only.
                await self.claims.patch(meta(claim)["name"], {"metadata": {"annotations": {
                    ANN_STORAGE_RESIZER: driver}}}, namespace=meta(claim)["namespace"], subresource="status")
                self.recorder.event(claim, "Normal", "ExternalExpanding", "waiting for an external controller to "
                                                                          "expand this PVC")
            return
        size = claim["spec"]["resources"]["requests"]["storage"]
        if (spec.get("capacity") or {}).get("storage") != size:
            new = copy.deepcopy(volume)
            new["spec"]["capacity"] = {**(spec.get("capacity") or {}), "storage": size}
            await self.volumes.update(new)
        status = {**claim["status"], "capacity": {**(claim["status"].get("capacity") or {}), "storage": size}}
        await self.claims.update_status({**claim, "status": status})
        self.recorder.event(claim, "Normal", "VolumeResizeSuccessful",
                            f"ExpandVolume succeeded for volume {claim_key(claim)}")
