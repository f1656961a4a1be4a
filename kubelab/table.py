"""Plain-text output shared by the commands: kubectl-style column tables and short durations."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_duration", "render_table"]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell and separated by three spaces, as kubectl prints them."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [
        "   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in (headers, *rows)
    ]
    return "\n".join(lines)


def format_duration(seconds: float) -> str:
    """kubectl's AGE style: 45s, 3m12s, 2h5m, 3d4h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"
