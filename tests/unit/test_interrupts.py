"""Stop signals deferred to the end of a start-and-record section (kubelab/interrupts.py), and what that buys
`kubelab up`: a Ctrl-C that lands between a component's fork and its record still stops that component."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelab import interrupts, process
from kubelab.cluster import Cluster
from kubelab.components import COMPONENTS
from kubelab.etcd import find_etcd, free_port
from kubelab.supervisor import Unit

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


class Stop(Exception):
    pass


def stop_now() -> None:
    raise Stop


def test_outside_a_section_the_action_runs_at_once() -> None:
    with pytest.raises(Stop):
        interrupts.raise_or_defer(stop_now)


def test_a_section_defers_the_action_to_its_end_once() -> None:
    done: list[str] = []
    with pytest.raises(Stop), interrupts.uninterrupted():
        interrupts.raise_or_defer(stop_now)
        interrupts.raise_or_defer(stop_now)  # a second signal meanwhile: still one stop
        with interrupts.uninterrupted():
            done.append("inner")
        done.append("outer")  # the inner section's end is not the outer's
    assert done == ["inner", "outer"]
    interrupts.raise_or_defer(lambda: done.append("later"))  # nothing left pending
    assert done == ["inner", "outer", "later"]


def test_an_interruptible_wait_inside_a_section_acts_at_once() -> None:
    reached: list[str] = []
    with pytest.raises(Stop), interrupts.uninterrupted():
        interrupts.raise_or_defer(stop_now)
        with interrupts.interruptible():  # the deferred stop acts on entering it
            reached.append("wait")
    assert reached == []
    with pytest.raises(Stop), interrupts.uninterrupted(), interrupts.interruptible():
        interrupts.raise_or_defer(stop_now)  # arriving during the wait: at once
        reached.append("after")
    assert reached == []


def test_another_threads_section_does_not_hold_back_the_main_threads_signal() -> None:
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with interrupts.uninterrupted():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert entered.wait(10)
        with pytest.raises(Stop):
            interrupts.raise_or_defer(stop_now)
    finally:
        release.set()
        thread.join(10)


@pytest.fixture()
def stop_on_sigint() -> Iterator[None]:
    """`kubelab up`'s start-up handler: a SIGINT raises, through ``raise_or_defer``."""
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupts.raise_or_defer(stop_now))
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_sigint_between_fork_and_record_still_leaves_the_component_recorded(
        tmp_path: Path, stop_on_sigint: None) -> None:
    """The signal lands right after the spawn returned the child, before the cluster recorded it: the stop comes
    after the record, so `Cluster.stop` finds the process and stops it."""
    children: list[process.Spawned] = []

    def spawn_then_sigint(unit: Unit) -> process.Spawned:
        child = process.spawn(unit.name, SLEEPER, unit.log)
        children.append(child)
        signal.raise_signal(signal.SIGINT)  # its handler runs here, at the next bytecode
        return child

    cluster = Cluster(tmp_path, port=free_port(), nodes=0, etcd_binary=find_etcd(), etcd_tls=False,
                      pod_network="host", spawn=spawn_then_sigint)
    with pytest.raises(Stop):
        cluster._spawn(COMPONENTS["scheduler"], "scheduler", [])
    try:
        [child] = children
        assert [(r.name, r.pid) for r in cluster.state.processes] == [("scheduler", child.pid)]
    finally:
        cluster.stop(timeout=2)
        for child in children:  # had the record been lost, stop would not know it
            child.reap(0.1)
    assert not process.pid_alive(children[0].pid)
