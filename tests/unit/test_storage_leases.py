"""The etcd lease manager of expiring objects (Events): kube-apiserver's lease reuse rules."""

from __future__ import annotations

import asyncio

from apiserver.storage.leases import LeaseManager


class Etcd:
    """Grants leases with increasing IDs and remembers each TTL asked for."""

    def __init__(self) -> None:
        self.granted: list[int] = []

    async def grant(self, ttl: int) -> int:
        self.granted.append(ttl)
        return len(self.granted)


def manager(reuse_seconds: int = 60, max_attached: int = 1000) -> tuple[LeaseManager, Etcd, list[float]]:
    etcd, now = Etcd(), [1000.0]
    return LeaseManager(etcd.grant, reuse_seconds, max_attached, clock=lambda: now[0]), etcd, now


def test_writes_within_the_reuse_window_share_one_lease_granted_that_much_longer() -> None:
    leases, etcd, now = manager()

    async def run() -> list[int]:
        ids = [await leases.lease_for(3600)]
        now[0] += 59.5  # the lease still expires after this write's hour, and within its hour + 60 s
        ids.append(await leases.lease_for(3600))
        now[0] += 1.0  # now the shared lease would end before this write's hour: a new one
        ids.append(await leases.lease_for(3600))
        return ids

    assert asyncio.run(run()) == [1, 1, 2]
    assert etcd.granted == [3660, 3660]  # 1 h + min(5 % of it, 60 s)


def test_short_ttls_get_a_lease_each_and_the_reuse_window_is_at_most_5_percent() -> None:
    leases, etcd, _ = manager()

    async def run() -> list[int]:
        return [await leases.lease_for(10), await leases.lease_for(10), await leases.lease_for(400)]

    assert asyncio.run(run()) == [1, 2, 3]  # 5 % of 10 s is under a second: nothing to share
    assert etcd.granted == [10, 10, 420]
    small, small_etcd, _ = manager(reuse_seconds=5)
    assert asyncio.run(small.lease_for(3600)) == 1 and small_etcd.granted == [3605]


def test_no_lease_holds_more_than_the_attached_object_limit() -> None:
    leases, etcd, now = manager(max_attached=3)

    async def run() -> list[int]:
        ids = []
        for _ in range(7):
            now[0] += 0.1
            ids.append(await leases.lease_for(3600))
        return ids

    assert asyncio.run(run()) == [1, 1, 1, 2, 2, 2, 3]


def test_concurrent_writes_wait_for_one_grant_and_share_it() -> None:
    etcd = Etcd()

    async def run() -> list[int]:
        gate = asyncio.Event()

        async def slow_grant(ttl: int) -> int:
            await gate.wait()
            return await etcd.grant(ttl)

        leases = LeaseManager(slow_grant)
        waiting = [asyncio.ensure_future(leases.lease_for(3600)) for _ in range(5)]
        await asyncio.sleep(0)
        gate.set()
        return list(await asyncio.gather(*waiting))

    assert asyncio.run(run()) == [1] * 5
    assert etcd.granted == [3660]
