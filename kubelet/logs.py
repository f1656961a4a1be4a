"""Which lines of a container's log a ``pods/log`` request gets: ``sinceSeconds``/``sinceTime``, then ``tailLines``,
then ``limitBytes``, as the kubelet's ``ReadLogs`` applies them to CRI log files.

Each line of the file is CRI's ``<RFC3339Nano timestamp> <stream> <tag> <message>``; a line is kept when its time is
not before the cut-off (``sinceSeconds`` wins over ``sinceTime`` when both are given, as the kubelet's
``NewLogOptions``). The apiserver has already refused malformed or negative values (``PodLogOptions`` validation).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime

from apimachinery.meta import parse_time


def render(line: str, timestamps: bool) -> str:
    """The message of one CRI log line, behind its timestamp when ``timestamps`` is asked for."""
    parts = line.split(" ", 3)
    if len(parts) < 4:
        return line
    return f"{parts[0]} {parts[3]}" if timestamps else parts[3]


def since(query: Mapping[str, str], now: float | None = None) -> float | None:
    """The cut-off as seconds since the epoch, or None to keep every line."""
    if query.get("sinceSeconds"):
        return (time.time() if now is None else now) - int(query["sinceSeconds"])
    if query.get("sinceTime"):
        return parse_time(query["sinceTime"]).timestamp()
    return None


def line_time(line: str) -> float | None:
    stamp = line.split(" ", 1)[0]
    try:
        # Python's datetime keeps microseconds: the shim writes them, and CRI's nanoseconds lose nothing we need.
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def select(lines: list[str], query: Mapping[str, str], now: float | None = None) -> str:
    """The body of a non-following log request (every option but ``follow`` and ``previous``)."""
    cut = since(query, now)
    if cut is not None:
        lines = [line for line in lines if (stamp := line_time(line)) is None or stamp >= cut]
    if query.get("tailLines"):
        tail = int(query["tailLines"])
        lines = lines[-tail:] if tail > 0 else []
    timestamps = query.get("timestamps") in ("true", "1")
    body = "".join(render(line, timestamps) + "\n" for line in lines)
    if query.get("limitBytes"):
        body = body[: int(query["limitBytes"])]
    return body
