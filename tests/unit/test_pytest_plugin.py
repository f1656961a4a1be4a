"""The pytest plugin is installed with the package and inert until its fixtures are used."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, cast

import pytest

from kubelab import pytest_plugin


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    (entry,) = [e for e in entry_points(group="pytest11") if e.name == "kubelab"]
    assert entry.value == "kubelab.pytest_plugin"


def test_no_fixture_is_autouse() -> None:
    for name in pytest_plugin.__all__:
        marker = getattr(getattr(pytest_plugin, name), "_fixture_function_marker", None)
        marker = marker or getattr(getattr(pytest_plugin, name), "_pytestfixturefunction", None)
        assert marker is not None, name
        assert not marker.autouse, name


def test_its_options_are_in_the_help_and_a_suite_without_its_fixtures_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert "--kubelab-nodes" in done.stdout and "kubelab_components" in done.stdout
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--setup-plan"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kubelab" not in done.stdout


@pytest.mark.parametrize("worker, index", [("", 0), ("gw0", 0), ("gw7", 7)])
def test_the_xdist_worker_number(worker: str, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert pytest_plugin._worker_index() == index


@pytest.mark.parametrize("worker, workers, ordinal, cidr", [
    (0, 1, 0, None),  # the controller-manager's default, as kubelab up has it
    (0, 1, 1, "127.33.0.0/16"), (0, 1, 2, "127.34.0.0/16"),
    (1, 2, 0, "127.33.0.0/16"), (0, 2, 1, "127.34.0.0/16"), (1, 2, 1, "127.35.0.0/16"),
])
def test_every_cluster_of_every_worker_gets_a_pod_cidr_of_its_own(worker: int, workers: int, ordinal: int,
                                                                  cidr: str | None) -> None:
    assert pytest_plugin.pod_cidr(worker, workers, ordinal) == cidr


def test_pod_cidrs_run_out_loudly() -> None:
    with pytest.raises(RuntimeError, match="no pod CIDR left"):
        pytest_plugin.pod_cidr(3, 4, 60)


class FakeCluster:
    def __init__(self, **kwargs: object) -> None:
        self.kwargs = kwargs
        self.running = False

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False


def test_a_shape_is_shared_while_held_and_only_one_idle_cluster_stays_up(
        monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    import kubelab.api

    monkeypatch.setattr(kubelab.api, "Cluster", FakeCluster)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # as a run without xdist: worker 0 of 1
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    factory = pytest_plugin.ClusterFactory(tmp_path_factory)

    def acquire(holder: str, *args: Any, **kwargs: Any) -> FakeCluster:
        return cast(FakeCluster, factory.acquire(holder, *args, **kwargs))

    one = acquire("a.py", 1)
    assert acquire("b.py", 1, extra_args={}) is one  # same shape, same cluster
    api = acquire("b.py", 0, ["apiserver"])
    assert api is not one and api.kwargs["extra_args"] == {"controller-manager": ["--cluster-cidr", "127.33.0.0/16"]}
    factory.release("a.py")
    factory.release("b.py")  # both idle: only the one used last stays up
    assert not one.running and api.running
    assert acquire("c.py", 0, ["apiserver"]) is api
    again = acquire("c.py", 1)
    assert again is not one and again.kwargs["extra_args"] == {}  # the first pod CIDR (the default) reused
    factory.stop()
    assert not api.running and not again.running
