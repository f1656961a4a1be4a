"""Leader election over a ``coordination.k8s.io/v1`` Lease, with client-go's algorithm and timings.

How it stays safe without synchronized clocks (as client-go's ``leaderelection`` package):

* Every candidate GETs the Lease each ``retry_period`` (jittered ×1.2).  Expiry is judged on the *local*
  monotonic clock: a lease held by someone else counts as expired only once its content has not changed for
  ``leaseDurationSeconds`` since this candidate last saw it change.  ``renewTime`` is written for humans and
  other tools, never trusted across machines.
* Taking or renewing the lease is a PUT carrying the ``resourceVersion`` that was read, so of two candidates
  racing for an expired lease exactly one wins; the other gets 409 Conflict and tries again later.
* A leader renews every ``retry_period``; if it cannot renew within ``renew_deadline`` (or sees another
  holder) it stops leading.  ``lease_duration > renew_deadline`` leaves the old leader time to notice before
  anyone may take over.  This is not fencing: callers act only while ``is_leader()``.
* ``leaseTransitions`` increments on every change of holder; ``acquireTime`` is when the holder took it.
* ``release_on_cancel``: when ``run`` ends (``stop`` set or the task cancelled) a leader clears
  ``holderIdentity`` (and sets a 1 s duration) so a successor takes over at once instead of after a timeout.

Callbacks: ``on_started_leading(stopped)`` runs as a task once the lease is acquired; ``stopped`` is set when
leadership ends, and the task is cancelled if it has not returned ``retry_period`` seconds later.
``on_stopped_leading()`` runs when a term ends (unlike client-go, not when we never led).
``on_new_leader(identity)`` runs whenever the observed holder changes, including to ourselves.  Each may be
a plain or a coroutine function.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from apimachinery.errors import NotFound, StatusError
from apimachinery.meta import format_micro_time
from kubeclient.backoff import jittered
from kubeclient.client import ResourceClient
from kubeclient.clock import REAL_CLOCK, Clock
from kubeclient.types import Object

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
# A candidate whose attempt failed (the apiserver not answering yet: components start alongside it) asks again
# after this, doubling up to ``UNANSWERED_RETRY`` (or ``retry_period`` if shorter): an apiserver that became ready
# just after an attempt then costs at most that much of the start-up; one that finds the lease held waits
# ``retry_period`` as client-go.
FIRST_RETRY = 0.05
UNANSWERED_RETRY = 0.1  # a refused connection costs a millisecond: the controller-manager leads sooner

StartedLeading = Callable[[asyncio.Event], Awaitable[None] | None]
StoppedLeading = Callable[[], Awaitable[None] | None]
NewLeader = Callable[[str], Awaitable[None] | None]


async def _call(fn: Callable[..., Any] | None, *args: Any) -> None:
    if fn is None:
        return
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("leader election callback %r failed", fn)


class LeaderElector:
    """One candidate for the Lease ``namespace/name``; see the module docstring."""

    def __init__(
        self,
        leases: ResourceClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: StartedLeading | None = None,
        on_stopped_leading: StoppedLeading | None = None,
        on_new_leader: NewLeader | None = None,
        release_on_cancel: bool = True,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period × {JITTER_FACTOR}")
        if not identity:
            raise ValueError("identity must not be empty")
        self._leases = leases
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self.release_on_cancel = release_on_cancel
        self._clock = clock
        self._observed_spec: dict[str, Any] | None = None
        self._observed_time = 0.0
        self._leader = ""
        self._leading = False
        self._callback_tasks: set[asyncio.Task[None]] = set()

    def is_leader(self) -> bool:
        """True while this candidate holds the lease and has not failed to renew it."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder this candidate last observed ("" if none)."""
        return self._leader

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Campaign, lead and renew until leadership is lost or ``stop`` is set (or the task is cancelled)."""
        body = asyncio.create_task(self._campaign(), name=f"leaderelection {self.namespace}/{self.name}")
        waiters: set[asyncio.Task[Any]] = {body}
        if stop is not None:
            waiters.add(asyncio.create_task(stop.wait()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiters:
                task.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            for task in tuple(self._callback_tasks):
                task.cancel()
            await asyncio.gather(*self._callback_tasks, return_exceptions=True)

    async def _campaign(self) -> None:
        lead_task: asyncio.Task[None] | None = None
        stopped = asyncio.Event()
        try:
            backoff = FIRST_RETRY
            while not (held := await self._try_acquire_or_renew()):
                if held is None:  # the apiserver could not answer (still starting?): ask again soon
                    await self._clock.sleep(backoff)
                    backoff = min(2 * backoff, UNANSWERED_RETRY, self.retry_period)
                else:
                    await self._clock.sleep(jittered(self.retry_period, JITTER_FACTOR))
            log.info("%s acquired lease %s/%s", self.identity, self.namespace, self.name)
            self._leading = True
            if self._on_started_leading is not None:
                lead_task = asyncio.create_task(_call(self._on_started_leading, stopped), name="leading")
            await self._renew()
            log.info("%s lost lease %s/%s", self.identity, self.namespace, self.name)
        finally:
            was_leading, self._leading = self._leading, False
            if was_leading:
                stopped.set()
                if lead_task is not None:
                    done, _ = await asyncio.wait({lead_task}, timeout=self.retry_period)
                    if not done:
                        lead_task.cancel()
                        await asyncio.gather(lead_task, return_exceptions=True)
                if self.release_on_cancel:
                    await self._release()
                await _call(self._on_stopped_leading)

    async def _renew(self) -> None:
        """Renew every ``retry_period``; return once a renewal fails for ``renew_deadline`` or another holds it."""
        while True:
            try:
                async with asyncio.timeout(self.renew_deadline):
                    while not await self._try_acquire_or_renew():
                        if self._leader and self._leader != self.identity:
                            return
                        await self._clock.sleep(self.retry_period)
            except TimeoutError:
                return
            await self._clock.sleep(self.retry_period)

    def _new_spec(self, old: dict[str, Any]) -> dict[str, Any]:
        now = format_micro_time(self._clock.now())
        ours = old.get("holderIdentity") == self.identity
        transitions = int(old.get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.lease_duration)),
            "acquireTime": old.get("acquireTime") or now if ours else now,
            "renewTime": now,
            "leaseTransitions": transitions if ours else transitions + (1 if old else 0),
        }

    async def _try_acquire_or_renew(self) -> bool | None:
        """One attempt: True if we hold the lease afterwards, False if another holds it, None if the attempt
        ended in an API error (never raised)."""
        try:
            try:
                lease = await self._leases.get(self.name, self.namespace)
            except NotFound:
                created = await self._leases.create({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._new_spec({}),
                }, self.namespace)
                await self._observe(created)
                return True
            await self._observe(lease)
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if holder and holder != self.identity and self._observed_time + duration > self._clock.monotonic():
                return False
            updated = await self._leases.update({**lease, "spec": self._new_spec(spec)})
            await self._observe(updated)
            return True
        except StatusError as e:  # a lost race (409) is routine; anything else (a 403) the operator must see
            level = logging.DEBUG if e.code == 409 else logging.ERROR
            log.log(level, "%s: error retrieving or updating lease %s/%s: %s", self.identity, self.namespace,
                    self.name, e)
            return None

    async def _observe(self, lease: Object) -> None:
        """Note the lease content and, when it changed, when we saw it change (the local expiry clock)."""
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_time = self._clock.monotonic()
        holder = spec.get("holderIdentity") or ""
        if holder != self._leader:
            self._leader = holder
            if holder and self._on_new_leader is not None:
                task = asyncio.create_task(_call(self._on_new_leader, holder))
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_tasks.discard)

    async def _release(self) -> None:
        """Give the lease up (only if we still hold it); failures are logged, never raised."""
        try:
            async with asyncio.timeout(self.renew_deadline):
                lease = await self._leases.get(self.name, self.namespace)
                spec = lease.get("spec") or {}
                if spec.get("holderIdentity") != self.identity:
                    return
                now = format_micro_time(self._clock.now())
                await self._leases.update({**lease, "spec": {
                    "holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                    "leaseTransitions": int(spec.get("leaseTransitions") or 0)}})
                self._leader = ""
        except (StatusError, TimeoutError) as e:
            log.warning("%s: could not release lease %s/%s: %s", self.identity, self.namespace, self.name, e)
