"""One controller over the in-memory ``FakeAPIServer``, for the controllers' unit tests: start it with its
informers, let the test act, stop it cleanly (workers finished, watches closed, event recorder flushed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubeclient import Clientset, FakeAPIServer, InformerFactory


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    """Poll ``predicate`` on the event loop until it holds; fail after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


@asynccontextmanager
async def running(make: Callable[[Clientset, InformerFactory], Any],
                  fake: FakeAPIServer | None = None) -> AsyncIterator[tuple[FakeAPIServer, Clientset]]:
    """The controller ``make`` builds, running against ``fake`` (a new, empty one by default)."""
    fake = fake or FakeAPIServer()
    cs = Clientset(fake)
    factory = InformerFactory(cs)
    controller = make(cs, factory)
    stop = asyncio.Event()
    factory.start(stop)
    task = asyncio.create_task(controller.run(stop))
    try:
        yield fake, cs
    finally:
        stop.set()
        await asyncio.wait_for(task, 3)
        await factory.shutdown()
        recorder = getattr(controller, "recorder", None)
        if recorder is not None:
            await recorder.close()
