"""``InformerFactory``: one shared informer per (resource, namespace, selectors), started together.

Components ask the factory for informers instead of building them, so the controller-manager's many
controllers share one watch and one cache per resource (client-go's ``SharedInformerFactory``).  ``start``
launches every informer created so far that is not yet running and may be called again after asking for more.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubeclient.client import Clientset
from kubeclient.informer.informer import SharedInformer, wait_for_cache_sync
from kubeclient.resources import Resource

_Key = tuple[Resource, str | None, str | None, str | None]


class InformerFactory:
    def __init__(self, clientset: Clientset, *, resync_period: float | None = None, namespace: str | None = None,
                 **informer_options: Any) -> None:
        """``namespace`` scopes every informer; ``informer_options`` go to each ``SharedInformer``."""
        self.clientset = clientset
        self.resync_period = resync_period
        self.namespace = namespace
        self._options = informer_options
        self._informers: dict[_Key, SharedInformer] = {}
        self._tasks: dict[_Key, asyncio.Task[None]] = {}

    def informer(self, resource: Resource, *, label_selector: str | None = None,
                 field_selector: str | None = None, resync_period: float | None = None) -> SharedInformer:
        """The shared informer for ``resource`` and these selectors (created on first request)."""
        key = (resource, self.namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(self.clientset.resource(resource), namespace=self.namespace,
                                      label_selector=label_selector, field_selector=field_selector,
                                      resync_period=resync_period or self.resync_period, **self._options)
            self._informers[key] = informer
        return informer

    def start(self, stop: asyncio.Event) -> None:
        """Start every informer not yet running; they stop when ``stop`` is set."""
        for key, informer in self._informers.items():
            if key not in self._tasks:
                self._tasks[key] = asyncio.create_task(informer.run(stop), name=f"informer {key[0].plural}")

    async def wait_for_cache_sync(self, timeout: float | None = None, stop: asyncio.Event | None = None) -> bool:
        """Wait until every started informer has synced; False on timeout or once ``stop`` is set."""
        started = [self._informers[k] for k in self._tasks]
        return await wait_for_cache_sync(*started, timeout=timeout, stop=stop)

    async def shutdown(self) -> None:
        """Wait for the informers to return (set the ``stop`` event first)."""
        tasks = list(self._tasks.values())
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
