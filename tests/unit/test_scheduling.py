"""`make test`'s xdist groups (support.scheduling): every module it names exists, so a renamed module cannot drop
out of the host-global group unnoticed, and each module is one group."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.scheduling import HOST_GLOBAL, HOST_GLOBAL_GROUP, LONG, assign_groups

TESTS = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", [*HOST_GLOBAL, *LONG])
def test_every_module_named_exists(module: str) -> None:
    assert (TESTS / module).is_file(), f"support/scheduling.py names {module}, which is not in tests/"


def test_no_long_module_is_also_host_global() -> None:
    assert not set(LONG) & set(HOST_GLOBAL)


def test_this_module_is_a_group_of_its_own(request: pytest.FixtureRequest) -> None:
    groups = [mark.args[0] for mark in request.node.iter_markers("xdist_group")]
    assert groups == ["unit/test_scheduling.py"]


class FakeItem:
    """What assign_groups reads of a pytest.Item: its path, node id and markers."""

    def __init__(self, module: str, name: str) -> None:
        self.path = TESTS / module
        self.nodeid = f"tests/{module}::{name}"
        self.groups: list[str] = []

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.groups.append(mark.args[0])


def test_host_global_modules_share_one_group_and_start_first_under_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    items = [FakeItem("unit/test_errors.py", "test_a"), FakeItem(LONG[0], "test_b"),
             FakeItem("integration/test_pod_bridge.py", "test_c"), FakeItem("unit/test_errors.py", "test_d"),
             FakeItem("integration/test_walkthrough.py", "test_e")]
    assign_groups(items, str(TESTS))  # type: ignore[arg-type]
    assert [(i.nodeid.split("::")[1], i.groups) for i in items] == [
        ("test_e", [HOST_GLOBAL_GROUP]), ("test_c", [HOST_GLOBAL_GROUP]), ("test_b", [LONG[0]]),
        ("test_a", ["unit/test_errors.py"]), ("test_d", ["unit/test_errors.py"])]


def test_serial_runs_keep_pytests_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    items = [FakeItem("unit/test_errors.py", "test_a"), FakeItem("integration/test_walkthrough.py", "test_b")]
    assign_groups(items, str(TESTS))  # type: ignore[arg-type]
    assert [i.nodeid.split("::")[1] for i in items] == ["test_a", "test_b"]
