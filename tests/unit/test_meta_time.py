"""``metav1.MicroTime``: one formatter (apimachinery.meta.micro_time) for the audit log, the watch deliveries,
events and leases, in kube's format: RFC 3339 in UTC, exactly six fraction digits (truncated), ``Z``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from apimachinery.meta import format_micro_time, micro_time, now_rfc3339_micro, parse_time

MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def test_micro_time_has_six_fraction_digits_truncated_and_z() -> None:
    ns = 1_796_612_645_123_456_789  # 2026-12-07T03:04:05.123456789Z
    assert micro_time(ns) == "2026-12-07T03:04:05.123456Z"  # truncated, as Go's Format
    assert micro_time(ns + 1_000) == "2026-12-07T03:04:05.123457Z"  # the second's text reused
    assert micro_time(ns + 999_000_000) == "2026-12-07T03:04:06.122456Z"  # the next second formatted
    assert micro_time(ns) == "2026-12-07T03:04:05.123456Z"  # and back: the cache follows the second asked
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert micro_time(int(at.timestamp()) * 1_000_000_000 + 6_000) == "2026-01-02T03:04:05.000006Z"
    assert micro_time(0) == "1970-01-01T00:00:00.000000Z"


def test_datetimes_and_epoch_seconds_format_alike() -> None:
    at = datetime(2026, 12, 7, 3, 4, 5, 123456, tzinfo=UTC)
    assert format_micro_time(at) == "2026-12-07T03:04:05.123456Z"
    assert format_micro_time(at.astimezone(timezone(timedelta(hours=-5)))) == "2026-12-07T03:04:05.123456Z"  # UTC
    assert format_micro_time(at.replace(microsecond=0)) == "2026-12-07T03:04:05.000000Z"  # six digits, always
    assert format_micro_time(3.5) == "1970-01-01T00:00:03.500000Z"
    assert format_micro_time(at.timestamp()) == "2026-12-07T03:04:05.123456Z"  # a float's µs, rounded
    assert parse_time(format_micro_time(at)) == at


def test_now_is_a_micro_time() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    now = now_rfc3339_micro()
    assert MICRO_TIME.match(now), now
    assert parse_time(now) >= before
