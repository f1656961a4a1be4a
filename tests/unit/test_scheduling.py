"""`make test`'s units of work under pytest-xdist (support.scheduling): every module it names exists, so a renamed
module cannot drop out of the host-global unit unnoticed; a module is one unit, the host-global tests another, and
under xdist they come first."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.scheduling import HOST_GLOBAL, HOST_GLOBAL_GROUP, LONG, group_of, order

TESTS = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", [name.split("::")[0] for name in [*HOST_GLOBAL, *LONG]])
def test_every_module_named_exists(module: str) -> None:
    assert (TESTS / module).is_file(), f"support/scheduling.py names {module}, which is not in tests/"


def test_no_long_module_is_wholly_host_global() -> None:
    assert not set(LONG) & set(HOST_GLOBAL)


@pytest.mark.parametrize(("nodeid", "group"), [
    ("tests/unit/test_errors.py::test_a", "unit/test_errors.py"),
    ("tests/unit/test_errors.py::TestX::test_b[x-1]", "unit/test_errors.py"),
    ("tests/integration/test_pod_bridge.py::test_c", HOST_GLOBAL_GROUP),
    ("tests/integration/test_launcher.py::test_d", HOST_GLOBAL_GROUP),
    ("tests/integration/test_launcher_defaults.py::test_e", HOST_GLOBAL_GROUP),
    ("tests/integration/test_launcher_envs.py::test_f", "integration/test_launcher_envs.py"),  # not a prefix match
    ("tests/integration/test_walkthrough.py::test_walkthrough[en-4]", HOST_GLOBAL_GROUP),
    ("tests/integration/test_walkthrough.py::test_walkthrough[zh-4]", "integration/test_walkthrough.py"),
])
def test_units_of_work(nodeid: str, group: str) -> None:
    assert group_of(nodeid) == group


class FakeItem:
    """What ``order`` reads of a pytest.Item: its node id."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_host_global_tests_and_long_modules_start_first_under_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    ids = ["tests/unit/test_errors.py::test_a", f"tests/{LONG[1]}::test_b", "tests/integration/test_jobs.py::test_c",
           "tests/unit/test_errors.py::test_d", "tests/integration/test_walkthrough.py::test_walkthrough[zh-1]",
           "tests/integration/test_walkthrough.py::test_walkthrough[en-1]"]
    items = [FakeItem(i) for i in ids]
    order(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [ids[5], ids[2], ids[4], ids[1], ids[0], ids[3]]


def test_serial_runs_keep_pytests_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    ids = ["tests/unit/test_errors.py::test_a", "tests/integration/test_walkthrough.py::test_walkthrough[en-1]"]
    items = [FakeItem(i) for i in ids]
    order(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == ids
