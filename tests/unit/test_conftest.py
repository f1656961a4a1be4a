"""tests/conftest.py's ``ApiServer``: a start that fails leaves no apiserver behind.

A failed start that left its process running (and its ``Popen`` never waited for) surfaced later, in whichever test
the worker happened to be running when the ``Popen`` was collected, as ``ResourceWarning: subprocess N is still
running`` — an error under ``filterwarnings = error``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ApiServer
from kubelab.etcd import free_port
from kubelab.process import pid_alive


def test_an_apiserver_not_healthy_in_time_is_stopped_and_waited_for(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []

    class Recorded(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    server = ApiServer(f"http://127.0.0.1:{free_port()}", tmp_path)  # no etcd there: it never gets healthy
    with pytest.raises(RuntimeError, match="not healthy after 0.2s"):
        server.start(timeout=0.2)
    assert [proc.returncode is not None for proc in started] == [True]  # waited for: its Popen never warns
    assert not pid_alive(started[0].pid) and server.proc is None
