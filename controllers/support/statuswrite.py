"""``write_status``: a controller's status write, skipped when nothing changed (the workload controllers' status
updaters: ``updateStatefulSetStatus``, ``storeDaemonSetStatus``).

Guarantees: no request when the object already carries ``status``; on a 409 Conflict (the cache was behind) the
object is read fresh once and the comparison and write are tried again; a second conflict is raised, for the
worker loop to retry the whole sync.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Conflict
from apimachinery.meta import Object
from controllers.support.podutil import meta
from kubeclient import ResourceClient


async def write_status(client: ResourceClient, obj: Object, status: dict[str, Any]) -> Object:
    """``obj`` with ``status`` stored (the server's answer), or ``obj`` itself when it already had it."""
    for attempt in range(2):
        if (obj.get("status") or {}) == status:
            return obj
        try:
            return await client.update_status({**obj, "status": status})
        except Conflict:
            if attempt:
                raise
            m = meta(obj)
            obj = await client.get(m["name"], m.get("namespace"))
    return obj
