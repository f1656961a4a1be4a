"""Keeping etcd small: the periodic compactor, defragmentation at start and the alarm check.

etcd keeps every revision of every key until it is compacted, and a compacted backend keeps its free pages until
it is defragmented; past ``--quota-backend-bytes`` etcd raises the NOSPACE alarm and refuses every write.

- ``Compactor`` is kube-apiserver's compactor (``storage/etcd3/compact.go``): every ``--etcd-compaction-interval``
  it compacts etcd to the revision it saw one interval earlier, so a watch or list can resume from anything
  younger than one interval. Several apiservers compact once per interval between them: each compares the
  *version* of the key ``compact_rev_key`` with the one it last saw and only the one whose compare-and-put wins
  compacts; the others learn the new version and try again an interval later (so when the winner dies, another
  takes over within two intervals).
- ``defragment_if_fragmented`` runs once at start: a member whose backend file is more than
  ``DEFRAG_RATIO`` times the data it holds, and larger than ``DEFRAG_MIN_BYTES``, is defragmented. kube leaves
  defragmentation to operators because it blocks the member while it runs; at start nothing is served yet, and
  below 64 MiB the space returned is not worth a start-up that waits on it.
- ``alarm_problem`` is the readiness check: an active NOSPACE or CORRUPT alarm means writes fail, so the
  apiserver reports itself not ready until an operator compacts, defragments and disarms.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from .etcd3 import EtcdStorage, StorageError

log = logging.getLogger(__name__)

COMPACT_REV_KEY = b"compact_rev_key"
DEFAULT_COMPACTION_INTERVAL = 300.0  # kube-apiserver's --etcd-compaction-interval default: 5m
DEFRAG_RATIO = 2.0
DEFRAG_MIN_BYTES = 64 * 1024 * 1024


class Compactor:
    """Compacts etcd every ``interval`` seconds to the revision seen one interval before."""

    def __init__(self, storage: EtcdStorage, interval: float, endpoints: Sequence[str] = ()) -> None:
        self._storage = storage
        self.interval = interval
        self._endpoints = list(endpoints)
        self._version = 0  # compact_rev_key's version as last seen: the "compact time" of compact.go
        self._revision = 0  # etcd's revision when this compactor last ran: what the next run compacts to

    async def run(self) -> None:
        """Until cancelled: wait an interval, compact (the first run only records where it is, as kube's)."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.compact_once()
            except StorageError as err:
                log.error("etcd: endpoint (%s) compact failed: %s", self._endpoints, err)

    async def compact_once(self) -> int | None:
        """One round: the revision compacted to, or None (another apiserver's turn, or the first round)."""
        won, self._version, current = await self._storage.claim_compaction(COMPACT_REV_KEY, self._version,
                                                                          self._revision)
        target, self._revision = self._revision, current
        if not won or target == 0:
            return None
        # Not physical, as kube's: reads at older revisions fail at once, and a large backend freeing its pages
        # must not outlast the request's timeout.
        await self._storage.compact(target, physical=False)
        log.info("etcd: compacted rev (%d), endpoints (%s)", target, self._endpoints)
        return target


def fragmented(db_size: int, db_size_in_use: int) -> bool:
    return db_size > DEFRAG_MIN_BYTES and db_size > DEFRAG_RATIO * db_size_in_use


async def defragment_if_fragmented(members: Sequence[tuple[str, EtcdStorage]]) -> list[str]:
    """Defragment each (endpoint, connection to that member only) whose backend is mostly free pages; returns the
    endpoints defragmented. A member that cannot be asked is skipped with a warning: start-up goes on."""
    done = []
    for endpoint, member in members:
        try:
            before = await member.status()
            if not fragmented(before.db_size, before.db_size_in_use):
                continue
            log.info("etcd member %s is fragmented (dbSize %d bytes, %d in use): defragmenting", endpoint,
                     before.db_size, before.db_size_in_use)
            await member.defragment()
            after = await member.status()
            log.info("defragmented etcd member %s: dbSize %d -> %d bytes", endpoint, before.db_size, after.db_size)
            done.append(endpoint)
        except StorageError as err:
            log.warning("could not check etcd member %s for fragmentation: %s", endpoint, err)
    return done


async def alarm_problem(storage: EtcdStorage) -> str | None:
    """Why etcd cannot take writes (an active alarm), or None."""
    alarms = await storage.alarms()
    if not alarms:
        return None
    return "; ".join(f"etcd alarm {a.name} (memberID:{a.member_id})" for a in alarms)
