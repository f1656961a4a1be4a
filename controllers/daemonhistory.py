"""The ControllerRevisions of a DaemonSet: its template history (``constructHistory`` and ``cleanupHistory`` of
``pkg/controller/daemon/update.go``), which ``kubectl rollout history`` lists and ``kubectl rollout undo`` applies.

* A revision's ``data`` is the strategic merge patch that puts the DaemonSet's template back
  (``{"spec": {"template": {..., "$patch": "replace"}}}``); its hash (of that patch and the DaemonSet's
  ``collisionCount``) names it ``<ds>-<hash>`` and is the ``controller-revision-hash`` of the pods made from it.
* The current revision is the one whose data matches the template; there is none after a template change, so a
  new one is created numbered past the others, and an old one that matches again (an undo) is renumbered so it is
  the newest.  A name taken by different data is a hash collision: ``status.collisionCount`` goes up and the
  sync is retried with the new hash.
* Old revisions no live pod uses are deleted beyond ``revisionHistoryLimit``, oldest first.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from apimachinery.errors import AlreadyExists, NotFound
from apimachinery.meta import Object
from kubeclient import CONTROLLER_REVISIONS, DAEMON_SETS, Clientset

from controllers.controllerref import controller_uid
from controllers.daemonutil import REVISION_HASH_LABEL
from controllers.deployment.util import compute_hash
from controllers.podutil import controller_ref, meta

HASH_LABEL = "controller.kubernetes.io/hash"
DEFAULT_HISTORY_LIMIT = 10


class HashCollision(Exception):
    """A revision of another template (or owner) holds the name; retried after ``collisionCount`` went up."""


def revision_data(ds: Object) -> dict[str, Any]:
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_hash(ds: Object) -> str:
    return compute_hash(revision_data(ds), (ds.get("status") or {}).get("collisionCount"))


def revision_number(revision: Object) -> int:
    return int(revision.get("revision") or 0)


def new_revision(ds: Object, number: int) -> Object:
    """The ControllerRevision of ``ds``'s current template (``controlledHistory``'s new revision)."""
    template_labels = ((ds.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    digest = revision_hash(ds)
    metadata: dict[str, Any] = {
        "name": f"{meta(ds)['name']}-{digest}", "namespace": meta(ds).get("namespace"),
        "labels": {**template_labels, HASH_LABEL: digest},
        "ownerReferences": [controller_ref(ds, DAEMON_SETS.api_version, DAEMON_SETS.kind)],
    }
    if meta(ds).get("annotations"):
        metadata["annotations"] = dict(meta(ds)["annotations"])
    return {"apiVersion": CONTROLLER_REVISIONS.api_version, "kind": CONTROLLER_REVISIONS.kind, "metadata": metadata,
            "data": revision_data(ds), "revision": number}


def stale_revisions(revisions: Sequence[Object], current: Object, live_hashes: Iterable[str],
                    limit: int) -> list[Object]:
    """The old revisions beyond ``limit`` that no live pod was made from, oldest first."""
    live = set(live_hashes)
    old = [r for r in revisions if meta(r).get("name") != meta(current).get("name")
           and (meta(r).get("labels") or {}).get(HASH_LABEL) not in live]
    return sorted(old, key=revision_number)[:max(0, len(old) - limit)]


class History:
    """Reads and writes one DaemonSet's revisions through the API (see the module docstring)."""

    def __init__(self, clientset: Clientset) -> None:
        self.client = clientset.controller_revisions
        self.daemon_sets = clientset.daemon_sets

    async def current(self, ds: Object, revisions: Sequence[Object]) -> Object:
        """The revision of ``ds``'s template, created or renumbered to be the newest when needed; its
        ``HASH_LABEL`` is the hash the pods of the current template carry."""
        data = revision_data(ds)
        newest = max((revision_number(r) for r in revisions), default=0)
        matching = sorted((r for r in revisions if r.get("data") == data), key=revision_number)
        if matching:
            current = matching[-1]
            if revision_number(current) < newest:
                m = meta(current)
                current = await self.client.patch(m["name"], {"revision": newest + 1}, "merge", m.get("namespace"))
            return current
        revision = new_revision(ds, newest + 1)
        try:
            return await self.client.create(revision, meta(ds).get("namespace"))
        except AlreadyExists:
            existing = await self.client.get(revision["metadata"]["name"], meta(ds).get("namespace"))
            if existing.get("data") == data and controller_uid(existing) == meta(ds).get("uid"):
                return existing
        status = dict(ds.get("status") or {})
        status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
        await self.daemon_sets.update_status({**ds, "status": status})
        raise HashCollision(f"ControllerRevision {revision['metadata']['name']} holds another template")

    async def clean_up(self, ds: Object, revisions: Sequence[Object], current: Object, pods: Sequence[Object]) -> None:
        limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
        live = [(meta(p).get("labels") or {}).get(REVISION_HASH_LABEL) or "" for p in pods]
        for revision in stale_revisions(revisions, current, live, DEFAULT_HISTORY_LIMIT if limit is None else limit):
            try:
                await self.client.delete(meta(revision)["name"], meta(revision).get("namespace"))
            except NotFound:
                pass
