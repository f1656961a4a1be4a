"""``Controller``: the workqueue and worker loop every controller runs (client-go's controller pattern).

Guarantees:

* A key is synced by one worker at a time (the ``RateLimitingQueue`` contract), so ``sync`` never races
  itself for one object; a key enqueued while it is being synced is synced again afterwards.
* Retries live here, not in the business logic: ``sync`` raising makes the key come back after the
  per-key exponential backoff (5 ms doubling), up to ``max_retries`` times; success forgets the history.
  A 409 Conflict is routine (the cache was behind) and is retried quietly.
* ``run`` returns after ``stop`` is set and every worker has finished its current key.

Subclasses implement ``sync(key)`` and register informer handlers that only compute keys and enqueue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from apimachinery.errors import Conflict, Forbidden, NotFound, StatusError
from apimachinery.meta import Object
from kubeclient import DeletedFinalStateUnknown, RateLimitingQueue, meta_namespace_key
from kubeclient.informer import SharedInformer

log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 15


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def is_namespace_terminating(err: StatusError) -> bool:
    """The apiserver refused a create because the namespace is being deleted (a 403 with
    ``v1.NamespaceTerminatingCause``, or its message): the controller drops the write instead of retrying it."""
    return isinstance(err, Forbidden) and (any(cause.type == NAMESPACE_TERMINATING_CAUSE for cause in err.causes)
                                           or "because it is being terminated" in err.message)


def unwrap(obj: Object | DeletedFinalStateUnknown) -> Object:
    """The object a delete handler received, whether it came as the object or as a tombstone."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def key_of(obj: Object | DeletedFinalStateUnknown) -> str:
    """``namespace/name`` (``name`` when cluster-scoped), the key every queue holds."""
    return meta_namespace_key(obj)


def ensure_indexer(informer: SharedInformer, name: str, func: Any) -> None:
    """Add an index to a shared informer unless another controller already did (same name, same meaning)."""
    with contextlib.suppress(ValueError):
        informer.add_indexers({name: func})


class Controller:
    """One controller: a named rate-limited queue of keys and ``workers`` tasks draining it into ``sync``."""

    name: str = "controller"
    queue_name: str = ""  # kube's name for this controller's workqueue (its workqueue_* series); default: ``name``

    def __init__(self, *, workers: int = 1, max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        self.workers = workers
        self.max_retries = max_retries
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=self.queue_name or self.name)
        self.informers: list[SharedInformer] = []

    async def sync(self, key: str) -> None:
        """Make the world match the desired state of ``key``; idempotent; raise to be retried."""
        raise NotImplementedError

    def enqueue(self, obj: Object | DeletedFinalStateUnknown) -> None:
        self.queue.add(key_of(obj))

    def enqueue_after(self, obj: Object, delay: float) -> None:
        self.queue.add_after(key_of(obj), delay)

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)

    async def run(self, stop: asyncio.Event) -> None:
        """Wait for this controller's informers, then sync keys with ``workers`` tasks until ``stop``."""
        while not self.has_synced():
            if stop.is_set():
                return
            await asyncio.sleep(0.05)
        log.info("starting %s (%d workers)", self.name, self.workers)
        tasks = [asyncio.create_task(self._worker(), name=f"{self.name} worker {i}") for i in range(self.workers)]
        extra = self.background()
        try:
            await stop.wait()
        finally:
            self.queue.shut_down()
            for task in extra:
                task.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, *extra, return_exceptions=True)
            log.info("stopped %s", self.name)

    def background(self) -> list[asyncio.Task[None]]:
        """Periodic loops a controller runs beside its workers (node monitor, pod GC); none by default."""
        return []

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self.sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # every failure is retried by key; the worker itself never dies
                self._handle_error(key, err)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    def _handle_error(self, key: str, err: Exception) -> None:
        retries = self.queue.num_requeues(key)
        if retries >= self.max_retries:
            log.warning("%s: dropping %s out of the queue after %d retries: %s", self.name, key, retries, err)
            self.queue.forget(key)
            return
        if isinstance(err, (Conflict, NotFound)):
            log.debug("%s: retrying %s: %s", self.name, key, err)
        elif isinstance(err, StatusError):
            log.info("%s: error syncing %s, retrying: %s", self.name, key, err)
        else:
            log.exception("%s: error syncing %s, retrying", self.name, key)
        self.queue.add_rate_limited(key)
