"""Services and EndpointSlices, list-watched (kubeclient's informers), into ``ClusterRecords``.

Guarantee: a change the apiserver's watch delivers is in the records before the next query is answered after its
handler ran (handlers run on the server's event loop, records are updated in place); ``synced`` is set once both
informers have listed, which is when ``/ready`` turns 200. A delete missed while the watch was down arrives as a
tombstone and removes the object all the same. Pods are not watched: ``pods insecure`` needs none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubeclient import ENDPOINT_SLICES, SERVICES, Clientset, DeletedFinalStateUnknown, InformerFactory, Object

from .records import ClusterRecords

__all__ = ["RecordWatcher"]

Poke = Callable[[Object | DeletedFinalStateUnknown], None]


def _obj(obj: Object | DeletedFinalStateUnknown) -> Object:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class RecordWatcher:
    def __init__(self, client: Clientset, records: ClusterRecords) -> None:
        self.factory = InformerFactory(client)
        self.records = records
        self.services = self.factory.informer(SERVICES)
        self.slices = self.factory.informer(ENDPOINT_SLICES)
        self.services.add_event_handler(records.set_service, lambda _, new: records.set_service(new),
                                        lambda obj: records.delete_service(_obj(obj)))
        self.slices.add_event_handler(records.set_slice, self._slice_updated,
                                      lambda obj: records.delete_slice(_obj(obj)))

    def _slice_updated(self, old: Object, new: Object) -> None:
        # the service-name label may have changed: the slice leaves the old Service's records first
        self.records.delete_slice(old)
        self.records.set_slice(new)

    def on_kube_dns(self, poke: Poke) -> None:
        """Also tell ``poke`` about every Service and EndpointSlice event (it picks out ``kube-system/kube-dns``)."""
        for informer in (self.services, self.slices):
            informer.add_event_handler(poke, lambda _, new: poke(new), poke)

    async def run(self, stop: asyncio.Event, synced: asyncio.Event) -> None:
        """Run the informers until ``stop``; set ``synced`` once both have listed."""
        self.factory.start(stop)
        if await self.factory.wait_for_cache_sync(stop=stop):  # a stop before the sync ends the wait at once
            synced.set()
        await stop.wait()
        await self.factory.shutdown()
