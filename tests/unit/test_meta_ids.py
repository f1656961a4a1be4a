"""The create path's ObjectMeta stamps (apimachinery.meta): ``metadata.uid`` is a random RFC 4122 version-4 UUID in
its canonical text, as kube's ``uuid.NewUUID``; ``creationTimestamp`` is now, to the second, in UTC."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from datetime import UTC, datetime

import pytest

from apimachinery import meta
from apimachinery.meta import new_uid, now_rfc3339


def test_new_uid_is_a_canonical_random_version_4_uuid() -> None:
    uids = [new_uid() for _ in range(2000)]
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # canonical: lower-case hex, 8-4-4-4-12
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
    # every bit outside the fixed version and variant bits varies
    fixed = (0xF << 76) | (0x3 << 62)
    ones = zeros = 0
    for text in uids:
        value = uuid.UUID(text).int
        ones |= value
        zeros |= ~value
    assert ones | fixed == (1 << 128) - 1
    assert zeros & ((1 << 128) - 1) | fixed == (1 << 128) - 1


def test_now_rfc3339_is_the_current_second_in_utc() -> None:
    for _ in range(3):
        before = int(time.time())
        text = now_rfc3339()
        after = int(time.time())
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", text)
        stamped = int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())
        assert before <= stamped <= after
        time.sleep(0.6)  # across a second boundary at least once: the once-per-second text moves on


def test_uids_come_from_a_pool_of_random_bytes_read_4_kib_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``getrandom`` (which releases the GIL) per 256 UIDs, not per UID; threads never share bytes."""
    reads: list[int] = []
    real = os.urandom

    def counted(n: int) -> bytes:
        reads.append(n)
        return real(n)

    monkeypatch.setattr(meta, "_RANDOM", meta._RandomPool())
    monkeypatch.setattr(os, "urandom", counted)
    uids: list[str] = []

    def take() -> None:
        uids.extend(new_uid() for _ in range(1000))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(uids)) == 4000
    assert reads == [4096] * 16  # 4,000 UIDs of 16 bytes: 15.6 pools
