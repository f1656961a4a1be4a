"""The pytest plugin is installed with the package and inert until its fixtures are used."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

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
