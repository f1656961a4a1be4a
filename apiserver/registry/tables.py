"""Cell helpers shared by the strategies' ``row()`` methods (``pkg/printers/internalversion`` helpers).

kube-apiserver renders tables with ``Wide: true``, so every row carries the ``-o wide`` cells too and ``kubectl``
hides the ``priority > 0`` columns itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from apimachinery.meta import parse_time
from apiserver.registry.strategy import TableColumn, human_duration


def since(timestamp: str | None, now: datetime | None = None) -> str:
    """``translateTimestampSince``: ``<unknown>`` for an unset time; accepts ``Time`` and ``MicroTime``."""
    if not timestamp:
        return "<unknown>"
    try:
        then = parse_time(timestamp).astimezone(UTC)
    except ValueError:
        return "<unknown>"
    return human_duration(then.strftime("%Y-%m-%dT%H:%M:%SZ"), now)


def format_labels(labels: Mapping[str, Any] | None) -> str:
    """``labels.FormatLabels``: ``a=1,b=2`` sorted by key, ``<none>`` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def container_cells(containers: list[dict[str, Any]] | None) -> tuple[str, str]:
    """``layoutContainerCells``: comma-joined container names and images."""
    containers = containers or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def template_columns(selector_description: str) -> list[TableColumn]:
    """The ``-o wide`` columns every pod-template owner adds: CONTAINERS IMAGES SELECTOR."""
    return [
        TableColumn("Containers", priority=1, description="Names of each container in the template."),
        TableColumn("Images", priority=1, description="Images referenced by each container in the template."),
        TableColumn("Selector", priority=1, description=selector_description),
    ]
