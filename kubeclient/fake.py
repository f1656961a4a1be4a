"""``FakeAPIServer``: an in-memory apiserver behind the ``Transport`` interface, for fast unit tests.

``ResourceClient``, informers, reflectors, leader election and event recorders run on it unchanged.  It keeps
the semantics controller logic depends on, and leaves out what only the real apiserver (with its strategies,
validation and garbage collector) does — integration tests cover that:

Kept
  one global resourceVersion counter (like etcd's revision), bumped by every write; no-op updates don't write ·
  create (``generateName``, uid, creationTimestamp, generation, 409 AlreadyExists) · get · list with
  label/field selectors and ``limit``/``continue`` pages (items without kind/apiVersion, as on the wire) ·
  PUT with optimistic concurrency (409 Conflict on a stale ``metadata.resourceVersion``) · ``/status`` that
  changes only status while the main resource keeps status · generation bump when ``spec`` changes · PATCH
  (merge, JSON and strategic, through ``apimachinery.patch``) ·
  DELETE with preconditions, finalizers (``deletionTimestamp`` until they are removed) and graceful deletion
  of pods bound to a node · ``binding`` (409 if already bound) and ``eviction`` · watch from "" or "0"
  (ADDED for the current state) or from R (replay from history), selector transitions (an object that stops
  matching is DELETED for that watcher), ``timeoutSeconds``, 410 Expired for a resourceVersion older than
  the kept history.
Left out
  validation and defaulting beyond the above, namespace existence and deletion cascade, garbage collection
  and ``propagationPolicy``, disruption budgets, ``resourceVersion`` on list (always the current state).

Test controls: ``actions`` (every request, in order), ``fail_next`` (inject an error), ``close_watches``
(end every open stream, as a server timeout does), ``bookmark`` (send BOOKMARK to watchers that allow them),
``compact`` (forget history so older resourceVersions get 410), ``objects``, ``resource_version`` and
``watch_count``.
"""

from __future__ import annotations

import asyncio
import base64
from collections import deque
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, TypeVar, cast

import orjson

from apimachinery import errors
from apimachinery.errors import StatusError
from apimachinery.fields import parse_field_selector
from apimachinery.labels import parse_selector
from apimachinery.meta import generate_name, new_uid
from apimachinery.patch import jsonpatch, mergepatch, strategic
from kubeclient.clock import REAL_CLOCK, Clock, format_time
from kubeclient.resources import EVENTS_V1, PODS, RESOURCES, Resource, parse_path
from kubeclient.types import Object, WatchEvent

_T = TypeVar("_T")
_Key = tuple[str, str]  # (namespace or "", name)
ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


def _copy(obj: _T) -> _T:
    """A deep copy through JSON, which also proves the value is what a real server could store."""
    return cast(_T, orjson.loads(orjson.dumps(obj)))


def _field(obj: Object, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _success(code: int = 201) -> Object:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


@dataclass(frozen=True, slots=True)
class Action:
    """One request the fake served: ``verb`` is the HTTP verb, or ``WATCH`` for a stream."""

    verb: str
    path: str
    params: dict[str, str]
    body: Any = None
    content_type: str | None = None


@dataclass(slots=True)
class _Fault:
    error: StatusError
    verb: str | None
    path: str | None
    times: int


@dataclass(frozen=True, slots=True)
class _Change:
    rv: int
    resource: Resource
    type: ChangeType
    obj: Object
    old: Object | None


@dataclass(eq=False, slots=True)
class _Watch:
    resource: Resource
    namespace: str | None
    labels: Any
    fields: Any
    bookmarks: bool
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)

    def matches(self, obj: Object) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels") or {}):
            return False
        return self.fields is None or self.fields.matches({f: _field(obj, f) for f in self.fields.fields()})

    def translate(self, change: _Change) -> WatchEvent | None:
        """What this watcher sees of ``change``, given selector transitions (kube's cacher does the same)."""
        if change.resource is not self.resource:
            return None
        now = self.matches(change.obj)
        if change.type == "DELETED":
            return {"type": "DELETED", "object": _copy(change.obj)} if now else None
        before = change.old is not None and self.matches(change.old)
        if now:
            return {"type": "MODIFIED" if before else "ADDED", "object": _copy(change.obj)}
        return {"type": "DELETED", "object": _copy(change.obj)} if before else None


class FakeAPIServer:
    """See the module docstring.  Implements ``kubeclient.types.Transport``."""

    def __init__(self, *, resources: Iterable[Resource] = (*RESOURCES, EVENTS_V1), history: int = 1000,
                 clock: Clock = REAL_CLOCK) -> None:
        self._resources = tuple(resources)
        self._objects: dict[Resource, dict[_Key, Object]] = {r: {} for r in self._resources}
        self._rv = 1
        self._history: deque[_Change] = deque(maxlen=history)
        self._compacted = 0
        self._watches: set[_Watch] = set()
        self._faults: list[_Fault] = []
        self._clock = clock
        self.actions: list[Action] = []

    # --- test controls ------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def watch_count(self) -> int:
        """How many watch streams are open right now."""
        return len(self._watches)

    def objects(self, resource: Resource, namespace: str | None = None) -> list[Object]:
        """Copies of the stored objects of ``resource`` (optionally one namespace)."""
        return [_copy(o) for (ns, _), o in sorted(self._objects[resource].items())
                if namespace is None or ns == namespace]

    def fail_next(self, error: StatusError, *, verb: str | None = None, path: str | None = None,
                  times: int = 1) -> None:
        """Make the next ``times`` requests matching ``verb`` (``WATCH`` for streams) and path prefix fail."""
        self._faults.append(_Fault(error, verb, path, times))

    def close_watches(self) -> None:
        """End every open watch stream cleanly (what a server-side ``timeoutSeconds`` does)."""
        for w in self._watches:
            w.queue.put_nowait(None)

    def bookmark(self) -> None:
        """Send a BOOKMARK at the current resourceVersion to every watch that allowed bookmarks."""
        for w in self._watches:
            if w.bookmarks:
                w.queue.put_nowait({"type": "BOOKMARK", "object": {
                    "kind": w.resource.kind, "apiVersion": w.resource.api_version,
                    "metadata": {"resourceVersion": str(self._rv)}}})

    def compact(self) -> None:
        """Forget all history: watching from any version before now gets 410 Expired."""
        self._compacted = self._rv
        self._history.clear()

    # --- Transport -----------------------------------------------------------------------------------------

    async def request(self, verb: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None,
                      content_type: str | None = None) -> Object:
        if isinstance(body, bytes):
            body = orjson.loads(body)
        params = dict(params or {})
        self.actions.append(Action(verb, path, params, _copy(body), content_type))
        self._inject(verb, path)
        try:
            rp = parse_path(path, self._resources)
        except KeyError as e:
            raise errors.NotFound(f"the server could not find the requested resource ({e.args[0]})") from None
        res, ns, name, sub = rp.resource, rp.namespace or "", rp.name, rp.subresource
        if sub and sub not in res.subresources:
            raise errors.NotFound(f"{res.plural}/{sub}: the server could not find the requested resource")
        if verb == "GET":
            return self._list(res, rp.namespace, params) if name is None else _copy(self._get(res, ns, name))
        if verb == "POST" and name is None:
            return self._create(res, rp.namespace, body)
        if name is None:
            raise errors.MethodNotAllowed(f"{verb} is not supported on a collection")
        if verb == "POST" and sub == "binding":
            return self._bind(ns, name, body)
        if verb == "POST" and sub == "eviction":
            self._delete(PODS, ns, name, (body or {}).get("deleteOptions") or {})
            return _success()
        if verb == "PUT":
            return self._update(res, ns, name, body, sub)
        if verb == "PATCH":
            return self._patch(res, ns, name, body, content_type, sub)
        if verb == "DELETE" and not sub:
            return self._delete(res, ns, name, body or {})
        raise errors.MethodNotAllowed(f"{verb} is not supported on {path}")

    async def stream(self, path: str, *, params: Mapping[str, str] | None = None) -> AsyncGenerator[Object, None]:
        params = dict(params or {})
        self.actions.append(Action("WATCH", path, params))
        self._inject("WATCH", path)
        rp = parse_path(path, self._resources)
        if params.get("watch") not in ("true", "1"):
            raise errors.BadRequest("stream serves watch requests only")
        label_text, field_text = params.get("labelSelector"), params.get("fieldSelector")
        w = _Watch(rp.resource, rp.namespace, parse_selector(label_text) if label_text else None,
                   parse_field_selector(field_text) if field_text else None,
                   params.get("allowWatchBookmarks") == "true")
        initial: list[WatchEvent] = []
        rv_text = params.get("resourceVersion") or ""
        if rv_text in ("", "0"):
            for obj in sorted(self._objects[rp.resource].values(), key=lambda o: int(o["metadata"]["resourceVersion"])):
                if w.matches(obj):
                    initial.append({"type": "ADDED", "object": _copy(obj)})
        else:
            since = self._parse_rv(rv_text)
            if since < self._compacted:
                yield cast(Object, {"type": "ERROR", "object": errors.Gone(
                    f"too old resource version: {since} ({self._compacted})").to_status()})
                return
            initial = [e for c in self._history if c.rv > since if (e := w.translate(c)) is not None]
        self._watches.add(w)
        try:
            for event in initial:
                yield cast(Object, event)
            timeout = float(params.get("timeoutSeconds") or 0) or None
            deadline = asyncio.get_running_loop().time() + timeout if timeout else None
            while True:
                try:  # asyncio.timeout, not wait_for: 3.11's wait_for may swallow a cancellation (gh-86296)
                    async with asyncio.timeout_at(deadline):
                        event_or_end = await w.queue.get()
                except TimeoutError:
                    return
                if event_or_end is None:
                    return
                yield cast(Object, event_or_end)
        finally:
            self._watches.discard(w)

    # --- verbs --------------------------------------------------------------------------------------------

    def _inject(self, verb: str, path: str) -> None:
        for fault in self._faults:
            if (fault.verb in (None, verb)) and (fault.path is None or path.startswith(fault.path)):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                raise fault.error

    def _parse_rv(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise errors.BadRequest(f'resourceVersion: Invalid value: "{text}"') from None

    def _get(self, res: Resource, ns: str, name: str) -> Object:
        obj = self._objects[res].get((ns, name))
        if obj is None:
            raise errors.not_found(res.plural, name, res.group)
        return obj

    def _list(self, res: Resource, namespace: str | None, params: dict[str, str]) -> Object:
        label_text, field_text = params.get("labelSelector"), params.get("fieldSelector")
        w = _Watch(res, namespace, parse_selector(label_text) if label_text else None,
                   parse_field_selector(field_text) if field_text else None, False)
        list_rv, start = self._rv, ""
        token = params.get("continue")
        if token:
            state = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            list_rv, start = int(state["rv"]), state["start"]
            if list_rv < self._compacted:
                raise errors.Gone("The provided continue parameter is too old to display a consistent list result. "
                                  "You can start a new list without the continue parameter.")
        keys = sorted(k for k, o in self._objects[res].items() if f"{k[0]}/{k[1]}" > start and w.matches(o))
        limit = int(params.get("limit") or 0)
        more = bool(limit) and len(keys) > limit
        page = keys[:limit] if limit else keys
        items = []
        for key in page:
            item = _copy(self._objects[res][key])
            item.pop("kind", None)
            item.pop("apiVersion", None)
            items.append(item)
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if more:
            last = f"{page[-1][0]}/{page[-1][1]}"
            meta["continue"] = base64.urlsafe_b64encode(orjson.dumps({"rv": list_rv, "start": last})).decode()
            meta["remainingItemCount"] = len(keys) - len(page)
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta, "items": items}

    def _create(self, res: Resource, namespace: str | None, body: Any) -> Object:
        if not isinstance(body, dict):
            raise errors.BadRequest("the body of the request must be a JSON object")
        obj = _copy(body)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if not namespace:
                raise errors.MethodNotAllowed(f"POST {res.plural} needs a namespace in the path")
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.BadRequest("the namespace of the provided object does not match the namespace sent "
                                        "on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(res.kind, "", [errors.Cause("FieldValueRequired",
                                                                 "name or generateName is required",
                                                                 "metadata.name")])
            meta["name"] = generate_name(meta["generateName"])
        key = (namespace or "", meta["name"])
        if key in self._objects[res]:
            raise errors.already_exists(res.plural, meta["name"], res.group)
        for transient in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = format_time(self._clock.now())
        if "spec" in obj:
            meta["generation"] = 1
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        if res is PODS:
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        return self._commit(res, "ADDED", key, obj, None)

    def _update(self, res: Resource, ns: str, name: str, body: Any, sub: str | None) -> Object:
        if not isinstance(body, dict):
            raise errors.BadRequest("the body of the request must be a JSON object")
        old = self._get(res, ns, name)
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise errors.BadRequest("the name of the object does not match the name on the URL")
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(res.plural, name, res.group)
        return self._write(res, (ns, name), old, _copy(body), sub)

    def _patch(self, res: Resource, ns: str, name: str, patch: Any, content_type: str | None,
               sub: str | None) -> Object:
        old = self._get(res, ns, name)
        if content_type == "application/json-patch+json":
            new = jsonpatch.apply(old, patch)
        elif content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            if content_type == "application/merge-patch+json":
                new = mergepatch.apply(old, patch)
            else:
                new = strategic.apply(old, patch, res.kind)
            rv = ((patch or {}).get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(res.plural, name, res.group)
        else:
            raise errors.UnsupportedMediaType(f"the media type {content_type!r} is not supported for PATCH")
        if not isinstance(new, dict):
            raise errors.BadRequest("the patch did not produce an object")
        return self._write(res, (ns, name), old, new, sub)

    def _write(self, res: Resource, key: _Key, old: Object, new: Object, sub: str | None) -> Object:
        """Finish an update or patch: keep what the client may not change, then commit (or no-op)."""
        old_meta, meta = old["metadata"], new.setdefault("metadata", {})
        if sub == "status":
            status = new.get("status")
            new = _copy(old)
            new["status"] = status
            meta = new["metadata"]
        elif sub:
            raise errors.MethodNotAllowed(f"updates to {res.plural}/{sub} are not supported by the fake")
        elif "status" in res.subresources and "status" in old:
            new["status"] = _copy(old["status"])
        elif "status" in res.subresources:
            new.pop("status", None)
        for kept in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "generation"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        new["kind"], new["apiVersion"] = res.kind, res.api_version
        if new.get("spec") != old.get("spec") and "generation" in old_meta:
            meta["generation"] = old_meta["generation"] + 1
        if new == old:
            return _copy(old)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._commit(res, "DELETED", key, new, old)
        return self._commit(res, "MODIFIED", key, new, old)

    def _delete(self, res: Resource, ns: str, name: str, options: Object) -> Object:
        old = self._get(res, ns, name)
        meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.conflict(res.plural, name, res.group, f"Precondition failed: UID in precondition: "
                                  f"{pre['uid']}, UID in object meta: {meta.get('uid')}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(res.plural, name, res.group, "Precondition failed: resourceVersion mismatch")
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return _copy(old)
            new = _copy(old)
            new["metadata"]["deletionTimestamp"] = format_time(self._clock.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(res, "MODIFIED", (ns, name), new, old)
        grace = options.get("gracePeriodSeconds")
        if res is PODS and (old.get("spec") or {}).get("nodeName"):
            if grace is None:
                grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            if grace > 0:
                current = meta.get("deletionGracePeriodSeconds")
                if current is not None and current <= grace:
                    return _copy(old)
                new = _copy(old)
                new["metadata"]["deletionTimestamp"] = format_time(self._clock.now() + timedelta(seconds=grace))
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                return self._commit(res, "MODIFIED", (ns, name), new, old)
        return self._commit(res, "DELETED", (ns, name), _copy(old), old)

    def _bind(self, ns: str, name: str, body: Any) -> Object:
        pod = self._get(PODS, ns, name)
        binding = body if isinstance(body, dict) else {}
        target = (binding.get("target") or {}).get("name")
        if not target:
            raise errors.invalid("Binding", name, [errors.Cause("FieldValueRequired", "Required value",
                                                                "target.name")])
        uid = (binding.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise errors.conflict("pods", name, why=f"the UID in the binding ({uid}) does not match the pod")
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise errors.conflict("pods/binding", name, why=f'pod {name} is already assigned to node "{current}"')
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods/binding", name, why=f"pod {name} is being deleted, cannot be assigned")
        new = _copy(pod)
        new.setdefault("spec", {})["nodeName"] = target
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": format_time(self._clock.now())})
        status["conditions"] = conditions
        self._commit(PODS, "MODIFIED", (ns, name), new, pod)
        return _success()

    def _commit(self, res: Resource, kind: ChangeType, key: _Key, obj: Object, old: Object | None) -> Object:
        """Write with the next resourceVersion, record history and fan the change out to watchers."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        store = self._objects[res]
        if kind == "DELETED":
            store.pop(key, None)
        else:
            store[key] = obj
        if self._history.maxlen is not None and len(self._history) == self._history.maxlen:
            self._compacted = self._history[0].rv
        change = _Change(self._rv, res, kind, obj, old)
        self._history.append(change)
        for w in self._watches:
            event = w.translate(change)
            if event is not None:
                w.queue.put_nowait(event)
        return _copy(obj)
