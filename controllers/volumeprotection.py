"""The storage-object-in-use protection controllers (``pkg/controller/volume/pvcprotection``, ``pvprotection``).

The StorageObjectInUseProtection admission gives every new claim the ``kubernetes.io/pvc-protection`` finalizer and
every new volume ``kubernetes.io/pv-protection``; a deleted one stays (``Terminating``) until its controller takes
the finalizer away:

* ``persistentvolumeclaim-protection-controller``: a deleted claim keeps its finalizer while a pod that is not
  terminated (phase neither ``Succeeded`` nor ``Failed``) names it in a volume — its pods are looked up in the
  informer and then in the API (kube's ``askAPIServer``: a pod created a moment ago must not be missed);
  pod changes enqueue the claims they name;
* ``persistentvolume-protection-controller``: a deleted volume keeps its finalizer while it is ``Bound``.
"""

from __future__ import annotations

import logging

from apimachinery.meta import Object
from apimachinery.volumes import claim_key, pod_claim_names
from controllers.support.base import Controller, unwrap
from controllers.support.podutil import meta
from kubeclient import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    Clientset,
    DeletedFinalStateUnknown,
    InformerFactory,
    ResourceClient,
)

log = logging.getLogger(__name__)

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


def _protected(obj: Object, finalizer: str) -> bool:
    return bool(meta(obj).get("deletionTimestamp")) and finalizer in (meta(obj).get("finalizers") or [])


async def remove_finalizer(client: ResourceClient, obj: Object, finalizer: str) -> None:
    """Drop one finalizer with a write conditional on the object's resourceVersion (a 409 is retried)."""
    kept = [f for f in meta(obj).get("finalizers") or [] if f != finalizer]
    await client.update({**obj, "metadata": {**meta(obj), "finalizers": kept}})
    log.info("removed finalizer %s from %s", finalizer, meta(obj).get("name"))


def uses_claim(pod: Object, claim_name: str) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return claim_name in pod_claim_names(pod)


class PVCProtectionController(Controller):
    name = "persistentvolumeclaim-protection-controller"
    queue_name = "pvcprotection"

    def __init__(self, clientset: Clientset, factory: InformerFactory) -> None:
        super().__init__()
        self.claims = clientset.resource(PERSISTENT_VOLUME_CLAIMS)
        self.pods = clientset.pods
        self.claim_informer = factory.informer(PERSISTENT_VOLUME_CLAIMS)
        self.pod_informer = factory.informer(PODS)
        self.informers = [self.claim_informer, self.pod_informer]
        self.claim_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))
        self.pod_informer.add_event_handler(self._pod_changed, lambda old, new: self._pod_changed(new),
                                            self._pod_changed)

    def _pod_changed(self, obj: Object | DeletedFinalStateUnknown) -> None:
        pod = unwrap(obj)
        for name in pod_claim_names(pod):
            self.queue.add(f"{meta(pod).get('namespace', '')}/{name}")

    async def sync(self, key: str) -> None:
        claim = self.claim_informer.store.get_by_key(key)
        if claim is None or not _protected(claim, PVC_PROTECTION_FINALIZER):
            return
        namespace, name = meta(claim)["namespace"], meta(claim)["name"]
        if any(uses_claim(pod, name) for pod in self.pod_informer.store.list()
               if meta(pod).get("namespace") == namespace):
            return
        live = await self.pods.list(namespace)
        if any(uses_claim(pod, name) for pod in live.get("items") or []):
            return
        log.debug("claim %s is not used by any pod", claim_key(claim))
        await remove_finalizer(self.claims, claim, PVC_PROTECTION_FINALIZER)


class PVProtectionController(Controller):
    name = "persistentvolume-protection-controller"
    queue_name = "pvprotection"

    def __init__(self, clientset: Clientset, factory: InformerFactory) -> None:
        super().__init__()
        self.volumes = clientset.resource(PERSISTENT_VOLUMES)
        self.volume_informer = factory.informer(PERSISTENT_VOLUMES)
        self.informers = [self.volume_informer]
        self.volume_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        volume = self.volume_informer.store.get_by_key(key)
        if volume is None or not _protected(volume, PV_PROTECTION_FINALIZER):
            return
        if (volume.get("status") or {}).get("phase") == "Bound":
            return
        await remove_finalizer(self.volumes, volume, PV_PROTECTION_FINALIZER)
