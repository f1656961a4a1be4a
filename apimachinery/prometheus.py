"""The Prometheus text exposition format (version 0.0.4), as far as the kubelet's ``/metrics/resource`` needs it.

The kubelet writes it (``kubelet.stats``) and the apiserver's metrics API reads it (``apiserver.metrics``), so the
wire format lives here once. Only what that endpoint carries is supported: counters and gauges, one sample per
line, ``name{label="value",…} value timestamp_ms``; ``# HELP`` / ``# TYPE`` lines are written and skipped on read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Family:
    """One metric: its name, ``# HELP`` text, type (``counter`` or ``gauge``) and samples."""

    name: str
    help: str
    type: str
    samples: list[Sample]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``, as Prometheus' Go client prints samples: the shortest digits
    that round-trip, in exponent form below 1e-4 and from 1e6 up (``1.2345678e+07``, ``357.35``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    exp10 = len(mantissa) + int(exponent) - 1
    head = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        tail = f".{mantissa[1:]}" if len(mantissa) > 1 else ""
        return f"{head}{mantissa[0]}{tail}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return head + format(Decimal(repr(abs(value))).normalize(), "f")


def render(families: Iterable[Family]) -> str:
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for s in family.samples:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
            text = f"{s.name}{{{labels}}}" if labels else s.name
            text += f" {format_value(s.value)}"
            if s.timestamp_ms is not None:
                text += f" {s.timestamp_ms}"
            lines.append(text)
    return "\n".join(lines) + "\n"


def _labels(text: str) -> dict[str, str]:
    """``a="x",b="y\\"z"`` → ``{"a": "x", "b": 'y"z'}``."""
    labels: dict[str, str] = {}
    i = 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq].strip().lstrip(",").strip()
        if text[eq + 1] != '"':
            raise ValueError(f"label {key}: value must be quoted")
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                value.append({"n": "\n"}.get(text[j], text[j]))
            else:
                value.append(text[j])
            j += 1
        labels[key] = "".join(value)
        i = j + 1
        while i < len(text) and text[i] in ", ":
            i += 1
    return labels


def parse(text: str) -> Iterator[Sample]:
    """The samples of an exposition; a malformed line raises ``ValueError``."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            close = rest.rindex("}")
            labels, rest = _labels(rest[:close]), rest[close + 1:]
        else:
            name, _, rest = line.partition(" ")
            labels = {}
        parts = rest.split()
        if not 1 <= len(parts) <= 2:
            raise ValueError(f"malformed sample line: {raw!r}")
        yield Sample(name.strip(), float(parts[0]), labels, int(parts[1]) if len(parts) == 2 else None)
