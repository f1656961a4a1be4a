"""``kubelab.componentrun``: a component that does not get ready is stopped and waited for before the error is
raised, so no process (nor a ``Popen`` never waited for, which Python reports as ``ResourceWarning: subprocess N is
still running`` in whichever later test collects it, an error under ``filterwarnings = error``) is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelab.cluster import StartupError
from kubelab.componentrun import run_component
from kubelab.etcd import free_port
from kubelab.process import pid_alive


def test_a_component_not_ready_in_time_is_stopped_and_waited_for(tmp_path: Path) -> None:
    # a fresh interpreter (a Popen of this process); the zygote's children: tests/integration/test_run_component.py
    run = run_component("scheduler", "--master", f"http://127.0.0.1:{free_port()}", log=tmp_path / "s.log",
                        fork_server=False)
    with pytest.raises(StartupError, match=r"scheduler not ready within 0.2s; last lines of .*s\.log"):
        run.wait_ready(lambda: False, timeout=0.2)
    assert run.poll() is not None and not pid_alive(run.pid)
    assert run.stop() == run.poll()  # stopping again only reports how it ended
