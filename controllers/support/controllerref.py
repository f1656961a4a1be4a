"""Claiming dependents through controller ``ownerReferences`` (Kubernetes' ``ControllerRefManager``).

A controller owns exactly the objects whose controller ``ownerReference`` carries its uid.  ``claim`` walks
the candidates of one sync and decides, per object:

* owned by another controller → not ours, left alone;
* owned by us and still selected → ours;
* owned by us but no longer selected → released (our ownerReference removed), unless we are being deleted;
* an orphan that is selected, not being deleted, in our namespace → adopted (our controllerRef added),
  unless we are being deleted.

Adoption first re-reads the controller from the apiserver (not the cache): a controller that was just
deleted, or deleted and recreated under the same name, must not adopt (``RecheckDeletionTimestamp``).
Both writes are strategic merge patches keyed by owner uid and carrying the dependent's uid, so they touch
nothing else and cannot land on a recreated namesake; a dependent that vanished meanwhile is simply skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from apimachinery.errors import NotFound, StatusError
from apimachinery.labels import Selector, selector_from_label_selector
from apimachinery.meta import Object
from controllers.support.podutil import meta
from kubeclient import Indexer, ResourceClient

Fetch = Callable[[], Awaitable[Object]]


class AdoptionRefused(Exception):
    """The controller may not adopt: it is gone, recreated, or being deleted."""


def controller_uid(obj: Object) -> str | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")  # type: ignore[no-any-return]
    return None


def spec_selector(owner: Object) -> Selector | None:
    """``spec.selector`` of a workload as a selector, or None when it cannot be converted."""
    try:
        return selector_from_label_selector((owner.get("spec") or {}).get("selector"))
    except StatusError:
        return None


def resolve_controller(owners: Indexer, kind: str, obj: Object) -> Object | None:
    """The owner of ``kind`` in the ``owners`` cache that controls ``obj`` (``resolveControllerRef``): named by its
    controller ownerReference, and the same uid (a namesake made since is not it)."""
    ref = next((r for r in meta(obj).get("ownerReferences") or [] if r.get("controller")), None)
    if not ref or ref.get("kind") != kind:
        return None
    owner = owners.get_by_key(f"{meta(obj).get('namespace')}/{ref.get('name')}")
    return owner if owner is not None and meta(owner).get("uid") == ref.get("uid") else None


def selecting_owners(owners: Indexer, obj: Object) -> list[Object]:
    """The owners in ``obj``'s namespace whose non-empty selector selects it (candidates to adopt an orphan)."""
    labels = meta(obj).get("labels") or {}
    found = []
    for owner in owners.by_index("namespace", meta(obj).get("namespace") or ""):
        selector = spec_selector(owner)
        if selector is not None and not selector.empty() and selector.matches(labels):
            found.append(owner)
    return found


class ControllerRefManager:
    """Claims dependents (pods, ReplicaSets) of one controller object for one sync; see the module docstring."""

    def __init__(self, dependents: ResourceClient, controller: Object, selector: Selector, ref: dict[str, Any],
                 fetch_fresh: Fetch) -> None:
        self.dependents = dependents
        self.controller = controller
        self.selector = selector
        self.ref = ref
        self._fetch_fresh = fetch_fresh
        self._can_adopt: bool | None = None

    @property
    def _deleting(self) -> bool:
        return bool(meta(self.controller).get("deletionTimestamp"))

    async def claim(self, objs: Iterable[Object]) -> list[Object]:
        """The subset of ``objs`` this controller owns after adopting and releasing as needed."""
        claimed: list[Object] = []
        uid = meta(self.controller)["uid"]
        for obj in objs:
            owner = controller_uid(obj)
            selected = self.selector.matches(meta(obj).get("labels") or {})
            if owner is not None:
                if owner != uid:
                    continue
                if selected:
                    claimed.append(obj)
                elif not self._deleting:
                    await self._patch(obj, {"$patch": "delete", "uid": uid})
                continue
            if self._deleting or not selected or meta(obj).get("deletionTimestamp"):
                continue
            if meta(obj).get("namespace") != meta(self.controller).get("namespace"):
                continue
            await self._check_can_adopt()
            adopted = await self._patch(obj, self.ref)
            if adopted is not None:
                claimed.append(adopted)
        return claimed

    async def _check_can_adopt(self) -> None:
        if self._can_adopt is None:
            try:
                fresh = await self._fetch_fresh()
            except NotFound:
                fresh = None
            m = meta(self.controller)
            if fresh is None or meta(fresh).get("uid") != m["uid"]:
                self._can_adopt = False
                raise AdoptionRefused(f"original {m.get('namespace')}/{m['name']} is gone")
            if meta(fresh).get("deletionTimestamp"):
                self._can_adopt = False
                raise AdoptionRefused(f"{m.get('namespace')}/{m['name']} has just been deleted")
            self._can_adopt = True
        elif not self._can_adopt:
            raise AdoptionRefused(f"{meta(self.controller)['name']} may not adopt")

    async def _patch(self, obj: Object, ref: dict[str, Any]) -> Object | None:
        m = meta(obj)
        body = {"metadata": {"ownerReferences": [ref], "uid": m["uid"]}}
        try:
            return await self.dependents.patch(m["name"], body, "strategic", m.get("namespace"))
        except NotFound:
            return None
