"""The ControllerRevisions of a DaemonSet or a StatefulSet: its template history (``pkg/controller/history``,
with ``constructHistory``/``cleanupHistory`` of ``daemon/update.go`` and ``getStatefulSetRevisions``/
``truncateHistory`` of ``statefulset/stateful_set_control.go``), which ``kubectl rollout history`` lists and
``kubectl rollout undo`` applies.

* A revision's ``data`` is the strategic merge patch that puts the owner's template back
  (``{"spec": {"template": {..., "$patch": "replace"}}}``); its hash (of that patch and the owner's
  ``collisionCount``) names it ``<owner>-<hash>``.  The pods made from it carry, as ``controller-revision-hash``,
  the hash (DaemonSet) or the revision's whole name (StatefulSet): ``HistoryOwner.pod_key`` says which.
* The current revision is the one whose data matches the template; there is none after a template change, so a
  new one is created numbered past the others, and an old one that matches again (an undo) is renumbered so it is
  the newest.  A name taken by different data is a hash collision: ``status.collisionCount`` goes up and the
  sync is retried with the new hash.
* Old revisions that are neither kept (the current one; a StatefulSet's current and update revisions) nor used by
  a live pod are deleted beyond ``revisionHistoryLimit``, oldest first.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import AlreadyExists, NotFound
from apimachinery.meta import Object
from controllers.support.controllerref import controller_uid
from controllers.support.podutil import compute_hash, controller_ref, meta
from kubeclient import CONTROLLER_REVISIONS, Clientset, Resource

HASH_LABEL = "controller.kubernetes.io/hash"
REVISION_HASH_LABEL = "controller-revision-hash"  # on the pods (``apps.ControllerRevisionHashLabelKey``)
DEFAULT_HISTORY_LIMIT = 10


@dataclass(frozen=True)
class HistoryOwner:
    """What differs between the owners of revisions: their resource, and what their pods' revision label holds."""

    resource: Resource
    pods_carry_name: bool  # StatefulSet pods: the revision's name; DaemonSet pods: its hash

    def pod_key(self, revision: Object) -> str:
        """The ``controller-revision-hash`` of the pods made from ``revision``."""
        if self.pods_carry_name:
            return str(meta(revision).get("name") or "")
        return str((meta(revision).get("labels") or {}).get(HASH_LABEL) or "")


class HashCollision(Exception):
    """A revision of another template (or owner) holds the name; retried after ``collisionCount`` went up."""


def revision_data(owner: Object) -> dict[str, Any]:
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_hash(owner: Object) -> str:
    return compute_hash(revision_data(owner), (owner.get("status") or {}).get("collisionCount"))


def revision_number(revision: Object) -> int:
    return int(revision.get("revision") or 0)


def new_revision(owner: Object, resource: Resource, number: int) -> Object:
    """The ControllerRevision of ``owner``'s current template (``NewControllerRevision``)."""
    template_labels = ((owner.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    digest = revision_hash(owner)
    metadata: dict[str, Any] = {
        "name": f"{meta(owner)['name']}-{digest}", "namespace": meta(owner).get("namespace"),
        "labels": {**template_labels, HASH_LABEL: digest},
        "ownerReferences": [controller_ref(owner, resource.api_version, resource.kind)],
    }
    if meta(owner).get("annotations"):
        metadata["annotations"] = dict(meta(owner)["annotations"])
    return {"apiVersion": CONTROLLER_REVISIONS.api_version, "kind": CONTROLLER_REVISIONS.kind, "metadata": metadata,
            "data": revision_data(owner), "revision": number}


def stale_revisions(revisions: Sequence[Object], keep: Iterable[Object], live_keys: Iterable[str],
                    owner: HistoryOwner, limit: int) -> list[Object]:
    """The revisions beyond ``limit`` that are not kept and no live pod was made from, oldest first."""
    live, kept = set(live_keys), {meta(r).get("name") for r in keep}
    old = [r for r in revisions if meta(r).get("name") not in kept and owner.pod_key(r) not in live]
    return sorted(old, key=revision_number)[:max(0, len(old) - limit)]


class History:
    """Reads and writes one owner's revisions through the API (see the module docstring)."""

    def __init__(self, clientset: Clientset, owner: HistoryOwner) -> None:
        self.client = clientset.controller_revisions
        self.owner = owner
        self.owners = clientset.resource(owner.resource)

    async def current(self, owner: Object, revisions: Sequence[Object]) -> Object:
        """The revision of ``owner``'s template, created or renumbered to be the newest when needed
        (``HistoryOwner.pod_key`` of it is what the pods of the current template carry)."""
        data = revision_data(owner)
        newest = max((revision_number(r) for r in revisions), default=0)
        matching = sorted((r for r in revisions if r.get("data") == data), key=revision_number)
        if matching:
            current = matching[-1]
            if revision_number(current) < newest:
                m = meta(current)
                current = await self.client.patch(m["name"], {"revision": newest + 1}, "merge", m.get("namespace"))
            return current
        revision = new_revision(owner, self.owner.resource, newest + 1)
        try:
            return await self.client.create(revision, meta(owner).get("namespace"))
        except AlreadyExists:
            existing = await self.client.get(revision["metadata"]["name"], meta(owner).get("namespace"))
            if existing.get("data") == data and controller_uid(existing) == meta(owner).get("uid"):
                return existing
        status = dict(owner.get("status") or {})
        status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
        await self.owners.update_status({**owner, "status": status})
        raise HashCollision(f"ControllerRevision {revision['metadata']['name']} holds another template")

    async def clean_up(self, owner: Object, revisions: Sequence[Object], keep: Sequence[Object],
                       pods: Sequence[Object]) -> None:
        limit = (owner.get("spec") or {}).get("revisionHistoryLimit")
        live = [(meta(p).get("labels") or {}).get(REVISION_HASH_LABEL) or "" for p in pods]
        for revision in stale_revisions(revisions, keep, live, self.owner,
                                        DEFAULT_HISTORY_LIMIT if limit is None else limit):
            with contextlib.suppress(NotFound):
                await self.client.delete(meta(revision)["name"], meta(revision).get("namespace"))
