"""Field ownership of one resource: ``Update`` bookkeeping for every write and server-side ``Apply``
(k8s.io/apiserver's ``FieldManager`` over structured-merge-diff's ``merge.Updater``).

- ``update(old, new, manager)``: the fields a write added or changed become the manager's (one entry per manager,
  operation, apiVersion and subresource, its time renewed whenever it gains fields); every other entry loses the
  fields that changed or went. Managed fields sent in the body are the starting point when given (that is how a
  client rewrites them — kubectl's client-side → server-side apply migration), else the live object's.
- ``apply(live, config, manager, force)``: ``config`` merged into ``live``; fields the applier owned before and
  no longer applies are removed unless someone else owns them; fields of other managers whose value would change
  are conflicts (409 with one ``FieldManagerConflict`` cause each) unless ``force`` hands them over.

Both run after the strategy prepared the object, so defaults are owned by the writer of an Update (as kube's
defaulting on decode makes them) while an applier owns exactly what it applied. Fields the endpoint cannot change
(``status`` through the main resource, ``spec`` through ``/status``) and server-owned metadata are owned by no one.
"""

from __future__ import annotations

from typing import Any

import orjson

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.meta import now_rfc3339

from . import fieldpath, managedfields, typed
from .fieldpath import FieldSet
from .managedfields import Entry, Managed
from .schema import Schema

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY = "before-first-apply"
# Never owned (stripMeta): identity and server-maintained metadata.
STRIPPED: FieldSet = {
    "f:apiVersion": {}, "f:kind": {},
    "f:metadata": {"f:name": {}, "f:namespace": {}, "f:creationTimestamp": {}, "f:selfLink": {},
                   "f:uid": {}, "f:generation": {}, "f:managedFields": {}, "f:resourceVersion": {},
                   "f:deletionTimestamp": {}, "f:deletionGracePeriodSeconds": {}},
}


class FieldManager:
    """Managed fields of one kind; ``status_resets`` are the metadata a ``/status`` write cannot change."""

    def __init__(self, schema: Schema, group: str, version: str, kind: str, has_status: bool,
                 status_resets: tuple[str, ...] = ()) -> None:
        self.type = schema.kind_type(group, version, kind)
        self.api_version = f"{group}/{version}" if group else version
        self.group_version_kind = (self.api_version, kind)
        main = fieldpath.union(STRIPPED, {"f:status": {}}) if has_status else STRIPPED
        status = fieldpath.union(STRIPPED, {"f:spec": {}, "f:metadata": {f"f:{f}": {} for f in status_resets}})
        self.ignored: dict[str, FieldSet] = {"": main, "status": status, "scale": main}

    # --- Update ---------------------------------------------------------------------------------------------
    def update(self, old: dict[str, Any] | None, new: dict[str, Any], manager: str, subresource: str = "") -> None:
        """Record ``manager``'s write of ``new`` (over ``old``; None on create) in ``new``'s managedFields."""
        meta = new["metadata"]
        live_entries = (old or {}).get("metadata", {}).get("managedFields")
        managed = managedfields.decode(meta.get("managedFields")) if meta.get("managedFields") and \
            not subresource else None
        from_body = managed is not None
        if managed is None:
            managed = managedfields.decode(live_entries) or {}
        changed, removed = self._compare(old or {}, new, subresource)
        if not changed and not removed and not from_body:
            self._store(meta, live_entries)
            return
        lost = fieldpath.union(changed, removed)
        for entry in managed.values():
            entry.fields = fieldpath.difference(entry.fields, lost)
        if changed:
            entry = Entry(manager, "Update", self.api_version, None, changed, subresource)
            previous = managed.get(entry.key)
            if previous is not None:
                entry.fields = fieldpath.union(previous.fields, changed)
            entry.time = now_rfc3339()
            managed[entry.key] = entry
            managedfields.cap_updaters(managed)
        self._store(meta, managedfields.encode({k: e for k, e in managed.items() if e.fields}))

    # --- Apply ----------------------------------------------------------------------------------------------
    def apply(self, live: dict[str, Any], config: dict[str, Any], manager: str, force: bool,
              subresource: str = "") -> dict[str, Any]:
        """``live`` with ``config`` applied by ``manager``, its managedFields updated; ``live`` is not changed."""
        self._check_config(config)
        managed = managedfields.decode(live.get("metadata", {}).get("managedFields")) or {}
        if not managed and live:
            self._adopt_unmanaged(live, managed, subresource)
        ignored = self.ignored.get(subresource, STRIPPED)
        applied = fieldpath.recursive_difference(typed.field_set(config, self.type), ignored)
        entry = Entry(manager, "Apply", self.api_version, now_rfc3339(), applied, subresource)
        previous = managed.get(entry.key)
        merged = typed.merge(live, config, self.type)
        if previous is not None:
            owned = applied
            for key, other in managed.items():
                if key != entry.key:
                    owned = fieldpath.union(owned, other.fields)
            gone = fieldpath.difference(previous.fields, owned)
            if gone:
                merged = typed.remove(merged, gone, owned, self.type)
        changed, removed = self._compare(live, merged, subresource)
        if manager == "kubectl" and not force:
            force = self._only_last_applied_conflicts(live, managed, entry, changed)
        conflicts = [] if force else self._conflicts(managed, entry, changed)
        if conflicts:
            raise conflict_error(conflicts)
        lost = fieldpath.union(changed, removed)
        for key, other in managed.items():
            if key != entry.key:
                other.fields = fieldpath.difference(other.fields, lost)
        if previous is not None and previous.fields == applied and not changed and not removed:
            entry.time = previous.time  # a no-op apply writes nothing (IgnoreManagedFieldsTimestampsTransformer)
        managed[entry.key] = entry
        if manager == "kubectl":
            merged = self._sync_last_applied(merged, config)
        merged = dict(merged)
        merged["metadata"] = dict(merged.get("metadata") or {})
        self._store(merged["metadata"], managedfields.encode({k: e for k, e in managed.items() if e.fields}))
        return merged

    def _adopt_unmanaged(self, live: dict[str, Any], managed: Managed, subresource: str) -> None:
        """An object nobody manages yet (written before managedFields were kept, or by the server itself) has its
        fields owned by ``before-first-apply`` (skipNonAppliedManager), so a first apply sees their values."""
        existing, _ = self._compare({}, live, subresource)
        if existing:
            entry = Entry(BEFORE_FIRST_APPLY, "Update", self.api_version, now_rfc3339(), existing)
            managed[entry.key] = entry

    def _check_config(self, config: dict[str, Any]) -> None:
        api_version, kind = config.get("apiVersion") or "", config.get("kind") or ""
        if (api_version, kind) != self.group_version_kind:
            group, _, version = api_version.rpartition("/")
            raise errors.BadRequest(f"invalid object type: {group}/{version}, Kind={kind}")
        if (config.get("metadata") or {}).get("managedFields") is not None:
            raise errors.BadRequest("metadata.managedFields must be nil")

    def _conflicts(self, managed: Managed, applier: Entry, changed: FieldSet) -> list[tuple[Entry, str]]:
        out = []
        for key, other in managed.items():
            if key == applier.key:
                continue
            for path in fieldpath.paths(fieldpath.intersection(other.fields, changed)):
                out.append((other, fieldpath.path_string(path)))
        return out

    def _only_last_applied_conflicts(self, live: dict[str, Any], managed: Managed, applier: Entry,
                                     changed: FieldSet) -> bool:
        """kubectl's first server-side apply over client-side apply (lastAppliedManager): conflicts only on fields
        whose live value is still what the last-applied annotation says are no conflicts."""
        raw = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
        if not raw:
            return False
        try:
            last = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(last, dict):
            return False
        drifted, _ = typed.compare(live, typed.merge(live, last, self.type), self.type)
        allowed = fieldpath.difference(typed.field_set(last, self.type), drifted)
        conflicts: FieldSet = {}
        for key, other in managed.items():
            if key != applier.key:
                conflicts = fieldpath.union(conflicts, fieldpath.intersection(other.fields, changed))
        return bool(conflicts) and not fieldpath.difference(conflicts, allowed)

    @staticmethod
    def _sync_last_applied(merged: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        """kubectl's server-side apply keeps an existing last-applied annotation current (lastAppliedUpdater), so
        going back to client-side apply sees what was applied last."""
        annotations = (merged.get("metadata") or {}).get("annotations") or {}
        if LAST_APPLIED not in annotations:
            return merged
        applied = dict(config)
        meta = dict(applied.get("metadata") or {})
        notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
        if notes:
            meta["annotations"] = notes
        else:
            meta.pop("annotations", None)
        applied["metadata"] = meta
        merged = dict(merged)
        merged["metadata"] = dict(merged["metadata"])
        merged["metadata"]["annotations"] = {**annotations, LAST_APPLIED: orjson.dumps(applied).decode() + "\n"}
        return merged

    # --- shared ---------------------------------------------------------------------------------------------
    def _compare(self, old: dict[str, Any], new: dict[str, Any], subresource: str) -> tuple[FieldSet, FieldSet]:
        changed, removed = typed.compare(old, new, self.type)
        ignored = self.ignored.get(subresource, STRIPPED)
        return fieldpath.recursive_difference(changed, ignored), fieldpath.recursive_difference(removed, ignored)

    @staticmethod
    def _store(meta: dict[str, Any], entries: list[dict[str, Any]] | None) -> None:
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)


def conflict_error(conflicts: list[tuple[Entry, str]]) -> errors.Conflict:
    """kube's apply conflict: 409 Conflict, one ``FieldManagerConflict`` cause per field, managers sorted."""
    causes = [Cause("FieldManagerConflict", f"conflict with {entry.describe()}", path) for entry, path in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(orjson.dumps(entry.key).decode() + "\0" + entry.describe(), []).append(path)
        lines = []
        for key in sorted(by_manager):
            lines.append(f"conflict with {key.split(chr(0), 1)[1]}:")
            lines.extend(f"- {path}" for path in by_manager[key])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.Conflict(message, causes=causes)
