"""``PodControl``: how workload controllers create and delete their pods (Kubernetes' ``RealPodControl``).

Every create and delete is reported on the owner as an event — SuccessfulCreate / FailedCreate, SuccessfulDelete /
FailedDelete — so ``kubectl describe`` of a ReplicaSet or DaemonSet tells what its controller did.  Two outcomes
are not failures: a create refused because the namespace is being terminated (every create fails until it is
gone; nothing to report), and a delete of a pod that is already gone.  ``slow_start_batch`` is how they create
many pods: 1, 2, 4 … at a time, so a template the apiserver refuses costs one request, not hundreds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from apimachinery.errors import NotFound, StatusError
from apimachinery.meta import Object
from controllers.support.base import is_namespace_terminating
from controllers.support.podutil import meta
from kubeclient import Clientset, EventRecorder


async def slow_start_batch(count: int, initial: int, fn: Callable[[], Awaitable[None]]) -> tuple[int, Exception | None]:
    """Call ``fn`` ``count`` times in batches of 1, 2, 4 …; stop after the first batch with an error.

    Returns how many calls succeeded and the first error (``slowStartBatch``).
    """
    remaining, successes, batch = count, 0, min(count, initial)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        successes += batch - len(errors)
        if errors:
            first = errors[0]
            if not isinstance(first, Exception):
                raise first
            return successes, first
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


class PodControl:
    """Creates and deletes pods on behalf of an owner, recording the outcome as the owner's events."""

    def __init__(self, clientset: Clientset, recorder: EventRecorder) -> None:
        self.clientset = clientset
        self.recorder = recorder

    async def create(self, owner: Object, pod: Object) -> Object | None:
        """The created pod; None when the namespace is terminating; other errors are recorded and raised."""
        try:
            created = await self.clientset.pods.create(pod, meta(owner).get("namespace"))
        except StatusError as err:
            if is_namespace_terminating(err):
                return None
            self.recorder.event(owner, "Warning", "FailedCreate", f"Error creating: {err.message}")
            raise
        self.recorder.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {meta(created)['name']}")
        return created

    async def delete(self, owner: Object, pod: Object) -> bool:
        """Whether the pod was deleted now (False: it was already gone); other errors are recorded and raised."""
        m = meta(pod)
        try:
            await self.clientset.pods.delete(m["name"], m.get("namespace"))
        except NotFound:
            return False
        except StatusError as err:
            self.recorder.event(owner, "Warning", "FailedDelete", f"Error deleting: {err.message}")
            raise
        self.recorder.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {m['name']}")
        return True
