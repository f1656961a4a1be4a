"""ObjectMeta helpers shared by every component: keys, timestamps, uids, generated names."""

from __future__ import annotations

import os
import random
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any, NewType

import orjson

Object = dict[str, Any]
# "namespace/name" (or "name" for cluster-scoped objects), as client-go's MetaNamespaceKeyFunc.
ObjectKey = NewType("ObjectKey", str)

# Kubernetes' utilrand alphabet: no vowels (no words), no confusable 0/1/3.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_GENERATED_SUFFIX = 5
_MAX_GENERATED_PREFIX = 63 - _GENERATED_SUFFIX


_now: tuple[int, str] = (-1, "")  # the last second now_rfc3339 formatted, and its text


def now_rfc3339() -> str:
    """``metav1.Time`` serialisation: second precision, UTC, ``Z``. Formatted once per second: every create stamps
    creationTimestamp and managedFields' time, and ``strftime`` was ~3 % of the apiserver's loop on the create path."""
    global _now
    second = int(time.time())
    if _now[0] != second:
        _now = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _now[1]


def format_rfc3339(epoch_seconds: float) -> str:
    """``metav1.Time`` of a moment given in seconds since the epoch."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_duration(seconds: float) -> str:
    """``metav1.Duration`` (Go's ``time.Duration.String``) to the millisecond: ``1.5s``, ``2m0.25s``, ``1h0m0s``,
    ``0s``, ``250ms``."""
    ms = round(seconds * 1000)
    if ms == 0:
        return "0s"
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, frac = divmod(rest, 1000)
    text = f"{secs}.{frac:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    return f"{sign}{minutes}m{text}" if minutes else f"{sign}{text}"


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (``1m30s`` → 90.0, ``10.5s``, ``500ms``) or a plain number of seconds;
    ``ValueError`` otherwise."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r} (use e.g. 50s, 1m30s, 500ms)")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``, as kube's boolean flags take it (``--anonymous-auth=false``)."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"invalid boolean value {text!r}")


_second: list[tuple[int, str]] = [(-1, "")]  # the last second formatted, with its text up to the fraction
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micro_time(ns: int) -> str:
    """``metav1.MicroTime`` (RFC 3339 in UTC with exactly six fraction digits, truncated as Go's Format does, and
    ``Z``: ``2026-12-06T03:04:05.123456Z``) of ``ns`` nanoseconds since the epoch (``time.time_ns()``). The one
    formatter of MicroTime: the date and time of day are formatted once per second, since the stamps of a busy
    second (an audited request's stages, the watch deliveries) share them."""
    second, micros = divmod(ns // 1000, 1_000_000)
    cached = _second[0]
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
        _second[0] = cached
    return f"{cached[1]}{micros:06d}Z"


def format_micro_time(moment: datetime | float) -> str:
    """``micro_time`` of an aware datetime (a ``Clock`` reading) or of seconds since the epoch (``time.time()``,
    rounded to the microsecond as ``datetime.fromtimestamp`` does)."""
    micros = (moment - _EPOCH) // _MICROSECOND if isinstance(moment, datetime) else round(moment * 1_000_000)
    return micro_time(micros * 1000)


def now_rfc3339_micro() -> str:
    """``metav1.MicroTime`` of now (Lease renewTime, Event eventTime)."""
    return micro_time(time.time_ns())


def parse_time(value: str) -> datetime:
    """Parse ``metav1.Time`` or ``MicroTime`` into an aware datetime."""
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    return datetime.fromisoformat(value)


def json_copy(obj: Object) -> Object:
    """A deep copy of a JSON object (str keys; str, int, float, bool, None, list and dict values) by an orjson round
    trip: ~80x ``copy.deepcopy``, which was 0.08 s of the apiserver's start for the 122 RBAC bootstrap objects."""
    copied: Object = orjson.loads(orjson.dumps(obj))
    return copied


class _RandomPool:
    """``os.urandom`` read 4 KiB at a time and handed out 16 bytes per UID (as google/uuid's ``EnableRandPool``):
    each ``os.urandom`` releases the GIL around ``getrandom``, and on the create path the etcd client's threads
    took it every time, so the request waited for it back (py-spy: 3 % of the apiserver's loop in ``new_uid``)."""

    SIZE = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buf = b""
        self._pos = 0

    def take(self, n: int) -> bytes:
        with self._lock:
            if self._pos + n > len(self._buf):
                self._buf, self._pos = os.urandom(self.SIZE), 0
            pos = self._pos
            self._pos = pos + n
            return self._buf[pos:pos + n]


_RANDOM = _RandomPool()


def new_uid() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` but without the ``UUID`` object: every create takes one, and
    ``uuid4`` was 2.6 % of the apiserver's loop on the create path."""
    raw = bytearray(_RANDOM.take(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def generate_name(prefix: str) -> str:
    """``generateName`` + 5 random characters, the prefix cut so the result stays a valid 63-char name."""
    return prefix[:_MAX_GENERATED_PREFIX] + "".join(random.choices(_NAME_ALPHABET, k=_GENERATED_SUFFIX))


def namespace_key(namespace: str | None, name: str) -> ObjectKey:
    return ObjectKey(f"{namespace}/{name}" if namespace else name)


def object_key(obj: Object) -> ObjectKey:
    meta = obj["metadata"]
    return namespace_key(meta.get("namespace"), meta["name"])


def split_key(key: str) -> tuple[str | None, str]:
    namespace, _, name = key.rpartition("/")
    return (namespace or None), name


def resource_version(obj: Object) -> int:
    """The object's resourceVersion as an int (0 when unset)."""
    rv = obj.get("metadata", {}).get("resourceVersion")
    return int(rv) if rv else 0


def controller_of(obj: Object) -> Object | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None
