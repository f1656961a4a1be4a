"""The storage informers the volume plugins read through ``framework.VolumeLister``: claims, volumes and storage
classes, one watch each; any change is reported (``on_change``) so the scheduler can retry the pods these
plugins parked (kube-scheduler's PersistentVolumeClaim/PersistentVolume/StorageClass cluster events)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubeclient import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, Clientset
from kubeclient.informer import SharedInformer

Object = dict[str, Any]


class VolumeInformers:
    def __init__(self, client: Clientset) -> None:
        self.claims = SharedInformer(client.resource(PERSISTENT_VOLUME_CLAIMS))
        self.volume_informer = SharedInformer(client.resource(PERSISTENT_VOLUMES))
        self.classes = SharedInformer(client.resource(STORAGE_CLASSES))
        self.all = (self.claims, self.volume_informer, self.classes)

    def on_change(self, handler: Callable[[str], None]) -> None:
        """``handler(event)`` on every add or update (``PersistentVolumeClaimChange`` …)."""
        kinds = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")
        for informer, kind in zip(self.all, kinds, strict=True):
            informer.add_event_handler(functools.partial(_added, handler, f"{kind}Add"),
                                       functools.partial(_updated, handler, f"{kind}Update"))

    def claim(self, namespace: str, name: str) -> Object | None:
        return self.claims.store.get_by_key(f"{namespace}/{name}")

    def volumes(self) -> list[Object]:
        return self.volume_informer.store.list()

    def storage_class(self, name: str) -> Object | None:
        return self.classes.store.get_by_key(name) if name else None


def _added(handler: Callable[[str], None], event: str, _obj: Object) -> None:
    handler(event)


def _updated(handler: Callable[[str], None], event: str, _old: Object, _new: Object) -> None:
    handler(event)
