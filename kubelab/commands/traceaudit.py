"""The apiserver's audit log as ``kubelab trace`` reads it: one ``Write`` per audited request, exact to the µs.

Reads ``audit.k8s.io/v1`` Event JSON lines from the log and its lumberjack backups (``audit-<time>.log`` beside
it, oldest first) and joins each request's ``RequestReceived`` and ``ResponseComplete`` stages by ``auditID``
(``requestReceivedTimestamp`` is on every stage, so a policy that omits RequestReceived loses nothing). Only lines
that name the namespace are decoded, so a large log costs little more than reading it. A missing or unreadable
log is "no audit log" (``None``): the trace then falls back to whole-second times.

Which write is which is decided by ``objectRef``, never by time: a create's ``objectRef.uid`` is the created
object's, a status write's ``objectRef.resourceVersion`` the revision it stored (kubelab's audit log records the
response's; see ``apiserver.audit.middleware``), a binding is a ``create`` of ``pods/binding`` (or of
``bindings``) naming the pod.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from apimachinery.meta import parse_time

__all__ = ["Write", "find_writes", "log_files"]


@dataclass(frozen=True, slots=True)
class Write:
    """One audited request: when it arrived, when its response was complete, and what it wrote."""

    audit_id: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    uid: str
    revision: int | None  # the revision the write stored (objectRef.resourceVersion)
    user: str
    user_agent: str
    code: int | None
    received: datetime
    completed: datetime | None

    @property
    def who(self) -> str:
        agent = self.user_agent.split(" ", 1)[0]
        return f"{self.user} ({agent})" if agent else self.user


def log_files(path: Path) -> list[Path]:
    """The log's rotated backups, oldest first, then the log itself (those that exist)."""
    backup = re.compile(re.escape(path.stem) + r"-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}" + re.escape(path.suffix) + "$")
    try:
        backups = sorted(p for p in path.parent.iterdir() if backup.match(p.name))
    except OSError:
        backups = []
    return [*backups, *([path] if path.exists() else [])]


def find_writes(path: Path, namespace: str) -> list[Write] | None:
    """Every audited write (create/update/patch) in ``namespace``, in the order they arrived; None: no log."""
    files = log_files(path)
    if not files:
        return None
    needle = f'"namespace":"{namespace}"'
    stages: dict[str, dict[str, Any]] = {}
    for file in files:
        try:
            with file.open(encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if needle not in line:
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # a line cut short by a full disk or a crash
                    if event.get("verb") not in ("create", "update", "patch"):
                        continue
                    seen = stages.setdefault(str(event.get("auditID")), {})
                    seen[str(event.get("stage"))] = event
        except OSError:
            continue
    writes = [w for w in (_write(s) for s in stages.values()) if w is not None]
    return sorted(writes, key=lambda w: w.received)


def _write(stages: dict[str, dict[str, Any]]) -> Write | None:
    event = stages.get("ResponseComplete") or stages.get("RequestReceived")
    if event is None or not event.get("requestReceivedTimestamp"):
        return None
    ref = event.get("objectRef") or {}
    rv = str(ref.get("resourceVersion") or "")
    complete = stages.get("ResponseComplete")
    return Write(
        audit_id=str(event.get("auditID")), verb=str(event.get("verb")), resource=str(ref.get("resource") or ""),
        subresource=str(ref.get("subresource") or ""), namespace=str(ref.get("namespace") or ""),
        name=str(ref.get("name") or ""), uid=str(ref.get("uid") or ""), revision=int(rv) if rv.isdigit() else None,
        user=str((event.get("user") or {}).get("username") or ""), user_agent=str(event.get("userAgent") or ""),
        code=(complete.get("responseStatus") or {}).get("code") if complete else None,
        received=parse_time(event["requestReceivedTimestamp"]),
        completed=parse_time(complete["stageTimestamp"]) if complete and complete.get("stageTimestamp") else None,
    )
