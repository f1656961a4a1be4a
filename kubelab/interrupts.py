"""Stop signals that wait for the end of a section they must not cut in two.

`kubelab up` stops on Ctrl-C, SIGTERM or SIGHUP by raising from the signal handler, so that a start-up blocked in
a wait ends at once. Raised between a component's fork and the moment the cluster records its pid, though, it
leaves that process running with nobody to stop it. Such stretches run ``uninterrupted()``: a handler that goes
through ``raise_or_defer`` acts at the section's end instead. Inside one, ``interruptible()`` marks a wait before
anything was started (the cold zygote's imports), where acting at once is safe again.

Python runs signal handlers in the main thread, so only the main thread's sections defer them (the depth is per
thread; another thread's section never holds a signal back).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Action = Callable[[], None]


class _State(threading.local):
    depth = 0
    deferred: Action | None = None


_state = _State()


def raise_or_defer(action: Action) -> None:
    """From a signal handler: run ``action`` (which raises) now, or at the end of the running section."""
    if _state.depth:
        if _state.deferred is None:
            _state.deferred = action
        return
    action()


def _run_deferred() -> None:
    action, _state.deferred = _state.deferred, None
    if action is not None:
        action()


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A stretch a stop signal must not cut in two; one that arrived meanwhile acts when it ends."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0:
            _run_deferred()


@contextmanager
def interruptible() -> Iterator[None]:
    """Inside ``uninterrupted()``: a wait where nothing has been started yet, so a signal may act at once."""
    saved, _state.depth = _state.depth, 0
    try:
        _run_deferred()
        yield
    finally:
        _state.depth = saved
