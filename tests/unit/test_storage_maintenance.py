"""The maintenance flags and thresholds: kube-apiserver's --etcd-compaction-interval (Go duration, 5m, 0 off),
and when a member counts as fragmented."""

from __future__ import annotations

import pytest

from apiserver.__main__ import parse_args
from apiserver.storage.maintenance import DEFRAG_MIN_BYTES, fragmented

MIB = 1024 * 1024


def test_compaction_interval_flag() -> None:
    assert parse_args([]).etcd_compaction_interval == 300.0
    assert parse_args(["--etcd-compaction-interval", "0"]).etcd_compaction_interval == 0
    assert parse_args(["--etcd-compaction-interval", "1m30s"]).etcd_compaction_interval == 90.0
    with pytest.raises(SystemExit):
        parse_args(["--etcd-compaction-interval", "often"])


@pytest.mark.parametrize(("db_size", "in_use", "expected"), [
    (DEFRAG_MIN_BYTES + MIB, DEFRAG_MIN_BYTES // 4, True),
    (DEFRAG_MIN_BYTES + MIB, DEFRAG_MIN_BYTES, False),  # mostly live data: nothing to gain
    (DEFRAG_MIN_BYTES - MIB, MIB, False),  # small: not worth a slower start
])
def test_fragmented(db_size: int, in_use: int, expected: bool) -> None:
    assert fragmented(db_size, in_use) is expected
