"""A loop inside the apiserver that runs ``sync`` every ``interval`` seconds until stopped (the in-process
controllers: APIService autoregistration, ValidatingAdmissionPolicy status). A failed round is logged and the
next one retries; ``sync`` must be idempotent."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


class Periodic:
    """Subclasses set ``name`` and implement ``sync``."""

    name = "periodic"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    async def sync(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            try:
                await self.sync()
            except Exception as err:  # noqa: BLE001 - etcd away, a conflict: the next round retries
                log.warning("%s: %s", self.name, err)
            await asyncio.sleep(self.interval)
