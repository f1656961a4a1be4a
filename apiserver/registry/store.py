"""Generic storage of one resource (kube-apiserver's ``genericregistry.Store``): CRUD with the strategy's rules.

Objects are stored in etcd at ``/registry/<resource>/<namespace>/<name>`` (cluster-scoped:
``/registry/<resource>/<name>``) as JSON without ``metadata.resourceVersion``; the resourceVersion a client sees is
the key's etcd ``mod_revision``. Reads are served by the resource's watch cache (consistent ones after
``wait_fresh``); writes are etcd transactions, so:
- create fails with 409 AlreadyExists if the key exists;
- every update is a read-modify-write retried on conflict (``guaranteed_update``), failing with 409 Conflict only
  when the caller pinned a resourceVersion (or uid) that is no longer current;
- an update that changes nothing is not written (the resourceVersion stays);
- an object whose stored form etcd would refuse as too large (``--etcd-max-request-bytes``) is a 413 before the
  write, not an etcd error after it;
- deletion honours graceful deletion (pods), finalizers and ``propagationPolicy`` (orphan/foreground
  finalizers for the garbage collector);
- a strategy with a ``converter`` (a CRD's conversion webhook) has objects of another version converted on their
  way to etcd and back, only those whose ``apiVersion`` differs, and its watch cache decodes each batch of events
  in one conversion; an object that cannot be converted is that conversion's error (a 500), not a missing one.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

import orjson

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.meta import generate_name, new_uid, now_rfc3339

from ..fieldmanager import FieldManager, Schema, Writer
from ..storage.cacher import BatchDecoder, CachedObject, ObjectFilter, WatchCache
from ..storage.deliveries import RING, Watcher
from ..storage.etcd3 import EtcdStorage, KeyExists, KeyValue, RevisionMismatch
from ..storage.leases import DEFAULT_REUSE_SECONDS, LeaseManager
from ..storage.metrics import MeteredStorage
from ..storage.value import Transformer, TransformError
from .decoder import BodyDecoder
from .metadata import validate_meta_create, validate_meta_update
from .strategy import Object, Strategy

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
MAX_UPDATE_ATTEMPTS = 64
ETCD_MAX_REQUEST_BYTES = 3 * 512 * 1024  # etcd's --max-request-bytes default (1.5 MiB)
ETCD_TXN_OVERHEAD = 256  # framing of the compare-and-swap transaction around a put (the key counted apart)


@dataclass(slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None  # Orphan | Background | Foreground
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False


UpdateFn = Callable[[Object], Object | Awaitable[Object]]


class Untransformable(errors.InternalError):
    """A stored value none of the resource's transformers reads (its encryption key is gone), worded as kube's
    etcd3 store words it: a LIST names the key, a read of the object itself only the transformer's error."""

    def __init__(self, key: bytes, transform_error: str) -> None:
        cause = f'unable to transform key "{key.decode(errors="replace")}": {transform_error}'
        super().__init__(f"Internal error occurred: {cause}", causes=[Cause("", cause)])
        self.transform_error = transform_error

    def for_object(self) -> errors.InternalError:
        return errors.InternalError(f"Internal error occurred: {self.transform_error}",
                                    causes=[Cause("", self.transform_error)])


class Admission(Protocol):
    """The admission one write goes through (``apiserver.admission``'s chain bound to the request): ``mutate``
    may return a changed object, ``validate`` only accepts; both refuse by raising a StatusError."""

    async def mutate(self, obj: Object | None, old: Object | None) -> Object | None: ...

    async def validate(self, obj: Object | None, old: Object | None) -> None: ...


class ResourceStore:
    """All storage operations of one resource, with its strategy applied."""

    def __init__(self, strategy: Strategy, storage: EtcdStorage, cache_capacity: int = 10_000,
                 decoder: BodyDecoder | None = None, on_warning: Callable[[str], None] | None = None,
                 schema: Schema | None = None, transformer: Transformer | None = None,
                 max_request_bytes: int = ETCD_MAX_REQUEST_BYTES) -> None:
        self.strategy = strategy
        # How values are changed on their way to etcd and back (encryption at rest); None: stored as they are.
        self.transformer = transformer
        self.max_request_bytes = max_request_bytes
        self.decoder = decoder
        self.on_warning = on_warning
        self.prefix = strategy.etcd_prefix().encode()
        self.qualified = f"{strategy.resource}.{strategy.group}" if strategy.group else strategy.resource
        # etcd calls are timed under this resource's name (etcd_request_duration_seconds{type}).
        self.storage = cast(EtcdStorage, MeteredStorage(storage, self.qualified))
        # The writes' side of the record of deliveries: etcd's transaction answering a write (storage/deliveries.py).
        self._txn = Watcher("system:apiserver", "etcd-txn", self.qualified, time.time())
        # Whether this store serves a version other than the stored one (objects are converted both ways).
        self.converts = strategy.converts
        self.field_manager = FieldManager(schema or Schema(None), strategy.group, strategy.version, strategy.kind,
                                          "status" in strategy.subresources, strategy.status_resets)
        batch: BatchDecoder | None = self._decode_many if strategy.converter is not None else None
        self.cache = WatchCache(self.storage, self.prefix, self._decode, self._restamp, capacity=cache_capacity,
                                indexed_fields=("spec.nodeName",) if strategy.resource == "pods" else (),
                                decode_batch=batch, resource=self.qualified)
        self.ttl = 0  # seconds an object lives after each write (``expire_after``); 0: until deleted
        self._leases: LeaseManager | None = None

    def expire_after(self, ttl: int, reuse_seconds: int = DEFAULT_REUSE_SECONDS) -> None:
        """Each write of an object puts it under an etcd lease of ``ttl`` seconds (kube's ``TTLFunc``, which
        ``--event-ttl`` sets for Events): etcd deletes it that long after its last write."""
        self.ttl = ttl
        self._leases = LeaseManager(self.storage.grant_lease, reuse_seconds) if ttl > 0 else None

    async def _lease(self) -> int:
        return await self._leases.lease_for(self.ttl) if self._leases is not None else 0

    def reconfigure(self, strategy: Strategy, decoder: BodyDecoder, schema: Schema) -> None:
        """Serve the same objects (same keys, same watch cache) with new rules: a CRD's schema, columns or
        subresources changed."""
        self.strategy = strategy
        self.decoder = decoder
        self.converts = strategy.converts
        self.field_manager = FieldManager(schema, strategy.group, strategy.version, strategy.kind,
                                          "status" in strategy.subresources, strategy.status_resets)
        if self.converts:
            self.cache.rewrite(lambda co: self._cached(strategy.from_storage(co.obj), co.rv))

    # --- keys and encoding ----------------------------------------------------------------------------------
    def etcd_key(self, namespace: str | None, name: str) -> bytes:
        if self.strategy.namespaced:
            return self.prefix + f"{namespace}/{name}".encode()
        return self.prefix + name.encode()

    def namespace_prefix(self, namespace: str) -> bytes:
        return self.prefix + f"{namespace}/".encode()

    def _cached(self, obj: Object, rv: int) -> CachedObject:
        """Stamp ``rv`` into ``obj`` (in place) and wrap it with its encoding and selectable fields."""
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        key = f"{meta.get('namespace')}/{meta['name']}" if self.strategy.namespaced else meta["name"]
        return CachedObject(key, obj, orjson.dumps(obj), rv, meta.get("labels") or {},
                            self.strategy.selectable_fields(obj))

    def _load(self, key: bytes, value: bytes) -> tuple[Object, bool]:
        """The stored object (decrypted where encrypted) and whether it was stored in an old form."""
        stale = False
        if self.transformer is not None:
            try:
                value, stale = self.transformer.from_storage(value, key)
            except TransformError as err:
                raise Untransformable(key, str(err)) from None
        return orjson.loads(value), stale

    def _decode(self, key: bytes, value: bytes, rv: int) -> CachedObject:
        obj, stale = self._load(key, value)
        co = self._cached(self.strategy.from_storage(obj) if self.converts else obj, rv)
        co.stale = stale
        return co

    async def _decode_many(self, kvs: list[KeyValue]) -> list[CachedObject | errors.StatusError]:
        """Stored values in this version, those stored in another converted in one call (``converter``)."""
        loaded: list[tuple[Object, bool] | errors.StatusError] = []
        for kv in kvs:
            try:
                loaded.append(self._load(kv.key, kv.value))
            except Untransformable as err:
                loaded.append(err)
        objs = [item[0] for item in loaded if not isinstance(item, errors.StatusError)]
        wanted = self.strategy.api_version
        converted: Iterator[Object | errors.StatusError]
        try:
            converted = iter(await self._convert(objs, wanted))
        except errors.StatusError as err:  # those already in this version are still read
            converted = iter([o if o.get("apiVersion") == wanted else err for o in objs])
        out: list[CachedObject | errors.StatusError] = []
        for kv, item in zip(kvs, loaded, strict=False):
            if isinstance(item, errors.StatusError):
                out.append(item)
                continue
            obj = next(converted)
            if isinstance(obj, errors.StatusError):
                out.append(obj)
                continue
            co = self._cached(self.strategy.from_storage(obj), kv.mod_revision)
            co.stale = item[1]
            out.append(co)
        return out

    async def _convert(self, objs: list[Object], api_version: str) -> list[Object]:
        """``objs`` in ``api_version`` through the strategy's converter (none: as they are)."""
        converter = self.strategy.converter
        if converter is None or all(o.get("apiVersion") == api_version for o in objs):
            return objs
        return await converter.convert(objs, api_version)

    def _restamp(self, co: CachedObject, rv: int) -> CachedObject:
        return self._cached(co.obj, rv)  # (each .obj is a fresh copy)

    async def _encode_for_storage(self, key: bytes, obj: Object) -> tuple[bytes, Object]:
        """The stored bytes (encrypted where configured) and the object they hold; 413 when etcd would refuse
        the write as too large (nothing is written)."""
        obj["metadata"].pop("resourceVersion", None)
        converter = self.strategy.converter
        stored = (await self._convert([obj], converter.storage_api_version))[0] if converter is not None else obj
        stored = self.strategy.to_storage(stored) if self.converts else stored
        data = orjson.dumps(stored)
        if self.transformer is not None:
            data = self.transformer.to_storage(data, key)
        size = len(data) + 3 * len(key) + ETCD_TXN_OVERHEAD  # the txn names the key in compare, put and failure
        if size > self.max_request_bytes:
            raise errors.RequestEntityTooLarge(
                f"Request entity too large: etcdserver: request is too large: the {self.strategy.kind} would be "
                f"stored in {len(data)} bytes, over etcd's request limit of {self.max_request_bytes} bytes "
                f"(--etcd-max-request-bytes)")
        return data, stored

    # --- reads ----------------------------------------------------------------------------------------------
    async def _read(self, namespace: str | None, name: str) -> tuple[CachedObject, KeyValue]:
        key = self.etcd_key(namespace, name)
        kv = await self.storage.get(key)
        if kv is None:
            raise errors.not_found(self.strategy.resource, name, self.strategy.group)
        co = self.cache.get(key)
        if co is None or co.rv != kv.mod_revision:
            co = await self._decode_one(kv)
        return co, kv

    async def _decode_one(self, kv: KeyValue) -> CachedObject:
        """Decode one object read on its own (GET, the read of an update or delete)."""
        try:
            if self.strategy.converter is None:
                return self._decode(kv.key, kv.value, kv.mod_revision)
            co = (await self._decode_many([kv]))[0]
            if isinstance(co, errors.StatusError):
                raise co
            return co
        except Untransformable as err:
            raise err.for_object() from None

    async def get(self, namespace: str | None, name: str, resource_version: str | None = None) -> CachedObject:
        """GET: consistent from etcd; with ``resourceVersion=0`` (any) from the watch cache."""
        if resource_version is not None and (broken := self.cache.broken.get(self.etcd_key(namespace, name))):
            raise broken.for_object() if isinstance(broken, Untransformable) else broken
        if resource_version == "0":
            co = self.cache.get(self.etcd_key(namespace, name))
            if co is None:
                raise errors.not_found(self.strategy.resource, name, self.strategy.group)
            return co
        if resource_version:
            if not resource_version.isdigit():
                raise errors.BadRequest(f'resourceVersion: Invalid value: "{resource_version}": must be a '
                                        f"non-negative integer")
            await self.cache.wait_rv(int(resource_version))
            co = self.cache.get(self.etcd_key(namespace, name))
            if co is None:
                raise errors.not_found(self.strategy.resource, name, self.strategy.group)
            return co
        return (await self._read(namespace, name))[0]

    async def list_from_storage(self, filter: ObjectFilter, limit: int, start: bytes | None,
                                revision: int) -> tuple[list[CachedObject], int, bytes | None]:
        """A page straight from etcd at ``revision`` (0 = now): (objects, revision, next start key or None).

        Pages are cut after ``limit`` matching objects, reading etcd in chunks, as kube-apiserver does when a
        selector filters most keys away."""
        prefix = self.namespace_prefix(filter.namespace) if filter.namespace and self.strategy.namespaced \
            else self.prefix
        out: list[CachedObject] = []
        chunk = max(limit, 100)
        while True:
            kvs, rev, more = await self.storage.list(prefix, start=start, revision=revision, limit=chunk)
            revision = revision or rev
            decoded = await self._decode_page(kvs)
            for i, (kv, co) in enumerate(zip(kvs, decoded, strict=False)):
                if filter.matches(co):
                    out.append(co)
                    if len(out) == limit:
                        if i + 1 < len(kvs) or more:
                            return out, revision, kv.key + b"\0"
                        return out, revision, None
            if not more:
                return out, revision, None
            start = kvs[-1].key + b"\0"

    async def _decode_page(self, kvs: list[KeyValue]) -> list[CachedObject]:
        """A page read from etcd: the cache's objects where current, the others decoded (converted together)."""
        out: list[CachedObject | None] = []
        for kv in kvs:
            cached = self.cache.get(kv.key)
            out.append(cached if cached is not None and cached.rv == kv.mod_revision else None)
        missing = [kv for kv, co in zip(kvs, out, strict=False) if co is None]
        if self.strategy.converter is None:
            fresh = iter([self._decode(kv.key, kv.value, kv.mod_revision) for kv in missing])
        else:
            decoded = await self._decode_many(missing)
            for co in decoded:
                if isinstance(co, errors.StatusError):
                    raise co
            fresh = iter(decoded)  # type: ignore[arg-type]
        return [co if co is not None else next(fresh) for co in out]

    def _decode_typed(self, obj: Object, field_validation: str, old: Object | None = None) -> None:
        """Wrong JSON types are 400; unknown fields are dropped (Warn: a Warning header; Strict: 400). ``old``: the
        stored object an update replaces (its equal fields are not decoded again)."""
        if self.decoder is None:
            return
        strategy = self.strategy
        warnings = self.decoder.decode(obj, strategy.group, strategy.version, strategy.kind, field_validation, old)
        if self.on_warning is not None:
            for warning in warnings:
                self.on_warning(warning)

    # --- create ---------------------------------------------------------------------------------------------
    def _prepare_create(self, obj: Object, namespace: str | None, field_validation: str,
                        writer: Writer | None = None) -> Object:
        strategy = self.strategy
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.BadRequest("metadata must be an object")
        self._decode_typed(obj, field_validation)
        if strategy.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise errors.BadRequest("the namespace of the provided object does not match the namespace sent "
                                        "on the request")
            meta["namespace"] = namespace or body_ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(meta["generateName"])
        if meta.get("resourceVersion"):
            raise errors.BadRequest("resourceVersion should not be set on objects to be created")
        obj["apiVersion"] = strategy.api_version
        obj["kind"] = strategy.kind
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        if strategy.bumps_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        obj = kubernetes_order(obj)
        strategy.prepare_for_create(obj)
        causes = validate_meta_create(meta, strategy) + strategy.validate(obj)
        if causes:
            raise errors.invalid(strategy.kind, meta.get("name") or "", causes, strategy.group)
        if writer is not None:
            self.field_manager.update(None, obj, writer.manager, writer.subresource)
        return obj

    async def create(self, obj: Object, namespace: str | None, dry_run: bool = False,
                     field_validation: str = "Ignore", writer: Writer | None = None,
                     admission: Admission | None = None) -> CachedObject:
        """Create ``obj``; ``writer`` (the request's field manager) records its fields in managedFields;
        ``admission`` mutates the defaulted, valid object and validates the result before it is written."""
        obj = self._prepare_create(obj, namespace, field_validation, writer)
        if admission is not None:
            obj = await self._admit_create(obj, admission)
        meta = obj["metadata"]
        if dry_run:
            return self._cached(obj, 0)
        key = self.etcd_key(meta.get("namespace"), meta["name"])
        data, stored = await self._encode_for_storage(key, obj)
        try:
            rv = await self.storage.create(key, data, await self._lease())
        except KeyExists:
            raise errors.already_exists(self.strategy.resource, meta["name"], self.strategy.group) from None
        return await self._written(key, obj, stored, rv)

    async def _admit_create(self, obj: Object, admission: Admission) -> Object:
        """Mutating admission, then (if it changed anything) defaults and validation again, as kube-apiserver
        defaults a webhook's patched object and validates it in ``BeforeCreate``; then validating admission."""
        mutated = await admission.mutate(obj, None)
        if mutated is not None and mutated is not obj and mutated != obj:
            obj = self._revalidate_create(mutated, obj)
        await admission.validate(obj, None)
        return obj

    def _revalidate_create(self, new: Object, prepared: Object) -> Object:
        strategy = self.strategy
        if not isinstance(new.get("metadata"), dict):
            raise errors.BadRequest("metadata must be an object")
        meta, old_meta = new["metadata"], prepared["metadata"]
        for field in ("name", "namespace", "uid", "creationTimestamp", "generation", "managedFields"):
            if field in old_meta:
                meta[field] = old_meta[field]
        new["apiVersion"], new["kind"] = strategy.api_version, strategy.kind
        new = kubernetes_order(new)
        strategy.prepare_for_create(new)
        causes = validate_meta_create(meta, strategy) + strategy.validate(new)
        if causes:
            raise errors.invalid(strategy.kind, meta.get("name") or "", causes, strategy.group)
        return new

    async def _written(self, key: bytes, obj: Object, stored: Object, rv: int) -> CachedObject:
        """The response object of a write, also handed to the watch cache for its event; the moment etcd's
        transaction returned is recorded as the version's ``STORED`` delivery."""
        stored_at = time.time()
        if self.strategy.converter is not None:  # what a read will answer: the stored form converted back
            obj = self.strategy.from_storage((await self._convert([stored], self.strategy.api_version))[0])
        elif self.converts:
            obj = self.strategy.from_storage(self.strategy.to_storage(obj))
        co = self._cached(obj, rv)
        self.cache.prime(key, co)
        RING.record(self._txn, stored_at, (("STORED", co.key, rv),))
        return co

    # --- update ---------------------------------------------------------------------------------------------
    async def guaranteed_update(
        self,
        namespace: str | None,
        name: str,
        update: UpdateFn,
        *,
        subresource: str = "",
        precondition_rv: str | None = None,
        precondition_uid: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Ignore",
        writer: Writer | None = None,
        admission: Admission | None = None,
    ) -> CachedObject:
        """Read, apply ``update`` to a copy, validate with the strategy, write on the read revision; retry.

        ``update`` gets a deep copy of the stored object and returns the desired object (it may raise
        StatusErrors). ``subresource`` "status" applies the status rules; "" the main resource's. ``writer``
        records the change in managedFields (server-internal writes such as bindings pass none, as in kube).

        It starts from the watch cache's object when the cache has one (as kube's GuaranteedUpdate starts from
        the cacher's object), which saves an etcd read per update; the write is conditional on that object's
        revision, so a cache behind etcd costs a failed transaction that returns the current value. Whatever
        would end the update without a write (an error, no change, a deletion) is decided on etcd's current
        object only: with a cached start it is read again and the update retried."""
        strategy = self.strategy
        key = self.etcd_key(namespace, name)
        cached = None if dry_run else self.cache.get(key)
        current = cached is None or cached.stale
        co = (await self._read(namespace, name))[0] if current else cached
        assert co is not None
        for _ in range(MAX_UPDATE_ATTEMPTS):
            old = co.obj
            try:
                if precondition_uid and old["metadata"].get("uid") != precondition_uid:
                    raise errors.conflict(strategy.resource, name, strategy.group,
                                          f"Precondition failed: UID in precondition: {precondition_uid}, "
                                          f"UID in object meta: {old['metadata'].get('uid')}")
                if precondition_rv and precondition_rv != str(co.rv):
                    raise errors.conflict(strategy.resource, name, strategy.group)
                result = update(co.obj)  # a second decode: the update's own copy
                new: Object = await result if isinstance(result, Awaitable) else result
                new = self._prepare_update(new, old, subresource, field_validation, writer)
                if admission is not None:
                    # Inside the retry loop, as kube-apiserver's admission runs inside GuaranteedUpdate.
                    mutated = await admission.mutate(new, old)  # plugins replace, never change, the object
                    if mutated is not None and mutated != new:
                        new = self._prepare_update(mutated, old, subresource, field_validation, None)
                    await admission.validate(new, old)
            except errors.StatusError:
                if current:
                    raise
                co, current = (await self._read(namespace, name))[0], True
                continue
            if not current and (new == old or self._finalized(new)):
                co, current = (await self._read(namespace, name))[0], True
                continue
            if new == old:
                if not co.stale or dry_run:
                    return co
                # Unchanged, but stored with an old key or provider: written again, as kube's GuaranteedUpdate
                # does for a stale value (how `kubectl replace` of every Secret moves them to a new key).
                new = old
            if dry_run:
                return self._cached(new, co.rv)
            if self._finalized(new):
                return await self._delete_now(namespace, name, new, co.rv)
            data, stored = await self._encode_for_storage(key, new)
            try:
                rv = await self.storage.update(key, data, co.rv, await self._lease())
            except RevisionMismatch as err:
                if err.current is None:
                    raise errors.not_found(strategy.resource, name, strategy.group) from None
                co, current = await self._decode_one(err.current), True
                continue
            return await self._written(key, new, stored, rv)
        raise errors.conflict(strategy.resource, name, strategy.group, "too many concurrent updates; try again")

    def _prepare_update(self, new: Object, old: Object, subresource: str, field_validation: str,
                        writer: Writer | None = None) -> Object:
        strategy = self.strategy
        if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
            raise errors.BadRequest("the object must be a JSON object with metadata")
        self._decode_typed(new, field_validation, old)
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        body_name = meta.get("name")
        if body_name and body_name != old_meta["name"]:
            raise errors.BadRequest(f'the name of the object ({body_name}) does not match the name on the URL '
                                    f'({old_meta["name"]})')
        if strategy.namespaced and meta.get("namespace") and meta["namespace"] != old_meta.get("namespace"):
            raise errors.BadRequest("the namespace of the provided object does not match the namespace sent on "
                                    "the request")
        new["apiVersion"] = strategy.api_version
        new["kind"] = strategy.kind
        new = kubernetes_order(new)
        meta = new["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            # A PUT's uid is a precondition checked before; only a patch can get here with another uid.
            raise errors.invalid(strategy.kind, old_meta["name"], [Cause(
                "FieldValueInvalid", f"Invalid value: {meta['uid']!r}: field is immutable", "metadata.uid")],
                strategy.group)
        # Fields only the server sets: carried over from the stored object whatever the client sent.
        for field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta.pop("resourceVersion", None)
        meta.pop("selfLink", None)
        if old_meta.get("deletionTimestamp"):
            # A terminating object may lose finalizers but not gain new ones (kube-apiserver's rule).
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.invalid(strategy.kind, old_meta["name"], [Cause(
                    "FieldValueForbidden", f"Forbidden: no new finalizers can be added if the object is being "
                    f"deleted, found new finalizers {sorted(added)!r}", "metadata.finalizers")], strategy.group)
        if subresource == "binding":
            causes = []  # the server's own write (BindingREST): spec.nodeName and PodScheduled only
        elif subresource:
            # status, finalize, ephemeralcontainers: the strategy's prepare_for_<sub>_update /
            # validate_<sub>_update pair
            getattr(strategy, f"prepare_for_{subresource}_update")(new, old)
            causes = validate_meta_update(new["metadata"], old_meta, strategy) + \
                getattr(strategy, f"validate_{subresource}_update")(new, old)
        else:
            strategy.prepare_for_update(new, old)
            causes = validate_meta_update(meta, old_meta, strategy) + strategy.validate_update(new, old)
            if strategy.bumps_generation and strategy.spec_changed(new, old):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if causes:
            raise errors.invalid(strategy.kind, old_meta["name"], causes, strategy.group)
        if writer is not None:
            self.field_manager.update(old, new, writer.manager, writer.subresource)
        # Compare without resourceVersion, so a no-op update is detected.
        old_rv = old_meta.pop("resourceVersion", None)
        try:
            unchanged = new == old
        finally:
            if old_rv is not None:
                old_meta["resourceVersion"] = old_rv
        if unchanged:
            return old
        return new

    def _finalized(self, obj: Object) -> bool:
        """Being deleted, no finalizers left and no grace period pending: the object can go."""
        meta = obj["metadata"]
        return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and \
            not meta.get("deletionGracePeriodSeconds") and not self.strategy.deletion_pending(obj)

    async def _delete_now(self, namespace: str | None, name: str, obj: Object, rv: int) -> CachedObject:
        try:
            deleted_rv = await self.storage.delete(self.etcd_key(namespace, name), rv)
        except RevisionMismatch as err:
            if err.current is None:
                raise errors.not_found(self.strategy.resource, name, self.strategy.group) from None
            raise errors.conflict(self.strategy.resource, name, self.strategy.group) from None
        return self._cached(obj, deleted_rv)

    # --- delete ---------------------------------------------------------------------------------------------
    async def delete(self, namespace: str | None, name: str, options: DeleteOptions,
                     admission: Admission | None = None) -> tuple[CachedObject, bool]:
        """DELETE: returns (object, removed). ``removed`` False means it is now terminating (grace/finalizers).
        ``admission`` sees the stored object as ``oldObject`` (mutating webhooks cannot change a deletion)."""
        strategy = self.strategy
        if (reason := strategy.forbid_delete(name)) is not None:
            raise errors.forbidden(strategy.resource, name, reason, strategy.group)
        co, kv = await self._read(namespace, name)
        if admission is not None:
            await admission.mutate(None, co.obj)
            await admission.validate(None, co.obj)
        for _ in range(MAX_UPDATE_ATTEMPTS):
            obj = co.obj
            meta = obj["metadata"]
            if options.precondition_uid and meta.get("uid") != options.precondition_uid:
                raise errors.conflict(strategy.resource, name, strategy.group,
                                      f"Precondition failed: UID in precondition: {options.precondition_uid}, "
                                      f"UID in object meta: {meta.get('uid')}")
            if options.precondition_rv and options.precondition_rv != str(co.rv):
                raise errors.conflict(strategy.resource, name, strategy.group,
                                      f"Precondition failed: ResourceVersion in precondition: "
                                      f"{options.precondition_rv}, ResourceVersion in object meta: {co.rv}")
            new = self._mark_deleted(obj, options)
            if options.dry_run:
                return (self._cached(new, co.rv) if new is not None else co), new is None
            try:
                if new is None:
                    rv = await self.storage.delete(kv.key, co.rv)
                    return self._restamp(co, rv), True
                if new is obj:
                    return co, False
                data, stored = await self._encode_for_storage(kv.key, new)
                rv = await self.storage.update(kv.key, data, co.rv, await self._lease())
                return await self._written(kv.key, new, stored, rv), False
            except RevisionMismatch as err:
                if err.current is None:
                    raise errors.not_found(strategy.resource, name, strategy.group) from None
                kv = err.current
                co = await self._decode_one(kv)
        raise errors.conflict(strategy.resource, name, strategy.group, "too many concurrent updates; try again")

    def _mark_deleted(self, obj: Object, options: DeleteOptions) -> Object | None:
        """The object as it should be after this DELETE, or None when it is to be removed now."""
        strategy = self.strategy
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        policy = options.propagation_policy
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise errors.invalid("DeleteOptions", "", [Cause(
                "FieldValueNotSupported", f'Unsupported value: "{policy}": supported values: "Foreground", '
                f'"Background", "Orphan"', "propagationPolicy")])
        if not meta.get("deletionTimestamp"):
            if policy == "Orphan" and ORPHAN_FINALIZER not in finalizers:
                finalizers.append(ORPHAN_FINALIZER)
            elif policy == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
                finalizers.append(FOREGROUND_FINALIZER)
            if policy in ("Background", "Foreground"):
                finalizers = [f for f in finalizers if f != ORPHAN_FINALIZER or policy == "Orphan"]
        grace = 0
        if strategy.graceful_deletion:
            grace = strategy.graceful_delete_seconds(obj, options.grace_period_seconds)
        if not finalizers and grace == 0 and not strategy.deletion_pending(obj):
            return None
        new = copy.deepcopy(obj)
        strategy.prepare_for_delete(new)
        new_meta = new["metadata"]
        new_meta.pop("resourceVersion", None)
        if finalizers:  # with those the strategy's prepare_for_delete added
            new_meta["finalizers"] = finalizers + [f for f in new_meta.get("finalizers") or [] if f not in finalizers]
        current_grace = new_meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and current_grace is not None and grace >= current_grace:
            return obj  # already terminating with a shorter (or equal) grace period: nothing to write
        now = datetime.now(UTC)
        new_meta["deletionTimestamp"] = (now + timedelta(seconds=grace)).strftime("%Y-%m-%dT%H:%M:%SZ")
        new_meta["deletionGracePeriodSeconds"] = grace
        return new


def kubernetes_order(obj: Object) -> Object:
    """apiVersion, kind, metadata first, as kube-apiserver serialises objects (JSON readers see the same)."""
    head = ("apiVersion", "kind", "metadata")
    if tuple(obj)[:3] == head:
        return obj
    ordered = {k: obj[k] for k in head if k in obj}
    ordered.update((k, v) for k, v in obj.items() if k not in ordered)
    return ordered


def filter_for(strategy: Strategy, namespace: str | None, labels: Any, fields: Any) -> ObjectFilter:
    """The filter of a list or watch; a field selector on a field the resource does not expose is a 400."""
    supported = strategy.field_labels()
    for field, _op, _value in fields.requirements:
        if field not in supported:
            raise errors.BadRequest(f'field label not supported: {field}')
    return ObjectFilter(namespace if strategy.namespaced else None, labels, fields,
                        trigger_fields=("spec.nodeName",) if strategy.resource == "pods" else ())

