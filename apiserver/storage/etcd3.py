"""The only code that talks to etcd: ranges, transactions and watch streams over etcd's v3 gRPC API.

aetcd supplies the connection and the generated gRPC stubs; its convenience methods lack what the apiserver
needs (ranges with ``limit``/``revision``/sorting, compares on ``mod_revision``), so this module
builds the requests itself. Everything above it speaks in ``KeyValue``s and revisions; etcd errors become the
three storage exceptions below, which the registry turns into Kubernetes ``Status`` errors.

Guarantees:
- ``create`` succeeds only if the key does not exist (``create_revision == 0``);
- ``update``/``delete`` with an ``expected_revision`` succeed only if the key's ``mod_revision`` still equals it,
  so concurrent read-modify-write loops never lose an update;
- ``watch`` yields every change after ``start_revision`` in revision order, batch by batch, and raises
  ``Compacted`` when that history is gone. Its stream is read off the event loop (``WatchStream``), so a busy
  apiserver does not delay the watch cache, and through it every watcher, by loop turns per etcd response.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import ipaddress
import socket
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.experimental
from aetcd import rpc


@dataclass(slots=True, frozen=True)
class KeyValue:
    key: bytes
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(slots=True, frozen=True)
class WatchChange:
    """One etcd event: ``kind`` is ``put`` or ``delete``; ``prev`` is the value before it (when etcd still has it)."""

    kind: str
    kv: KeyValue
    prev: KeyValue | None


class StorageError(Exception):
    """Base of the storage layer's own errors."""


class KeyExists(StorageError):
    pass


class RevisionMismatch(StorageError):
    """The key's mod_revision was not the expected one; ``current`` is what is stored now (None: gone)."""

    def __init__(self, current: KeyValue | None) -> None:
        super().__init__("revision mismatch")
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than etcd's compacted history."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"required revision has been compacted (compact revision {compact_revision})")
        self.compact_revision = compact_revision


class Unavailable(StorageError):
    pass


class SpaceExceeded(StorageError):
    """etcd refuses writes: its backend reached ``--quota-backend-bytes`` (the NOSPACE alarm is raised)."""


@dataclass(slots=True, frozen=True)
class MemberStatus:
    """What etcd's Maintenance.Status says of the member that answered."""

    member_id: int
    version: str
    db_size: int  # bytes of the backend file
    db_size_in_use: int  # bytes of it holding live data (the rest is free pages a defragmentation returns)
    revision: int


@dataclass(slots=True, frozen=True)
class Alarm:
    member_id: int
    name: str  # NOSPACE | CORRUPT


def prefix_end(prefix: bytes) -> bytes:
    """The range end that covers every key starting with ``prefix``."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"


def _storage_error(err: grpc.aio.AioRpcError) -> StorageError:
    if err.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in (err.details() or ""):
        return Compacted(0)
    if err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "space" in (err.details() or ""):
        return SpaceExceeded(err.details() or "etcdserver: mvcc: database space exceeded")
    return Unavailable(f"etcd: {err.code().name}: {err.details()}")


def _kv(pb: Any) -> KeyValue:
    return KeyValue(pb.key, pb.value, pb.mod_revision, pb.create_revision)


@dataclass(frozen=True)
class EtcdTLS:
    """kube-apiserver's ``--etcd-cafile``, ``--etcd-certfile``, ``--etcd-keyfile`` (PEM paths; None: not given)."""

    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | None) -> bytes | None:
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()

        return grpc.ssl_channel_credentials(read(self.cafile), read(self.keyfile), read(self.certfile))


def uses_tls(servers: list[str], tls: EtcdTLS | None) -> bool:
    """https:// URLs (or a CA or client certificate given) mean TLS; mixing http:// and https:// is an error."""
    schemes = {urlsplit(s).scheme if "://" in s else "http" for s in servers}
    if len(schemes) > 1:
        raise ValueError(f"--etcd-servers mixes {' and '.join(sorted(schemes))} URLs: {','.join(servers)}")
    if "https" in schemes:
        return True
    if tls is not None and (tls.cafile or tls.certfile):
        raise ValueError("--etcd-cafile/--etcd-certfile are given but --etcd-servers has http:// URLs; "
                         "use https:// URLs for a TLS etcd")
    return False


def _endpoints(servers: list[str]) -> list[tuple[str, int]]:
    out = []
    for server in servers:
        parts = urlsplit(server if "://" in server else f"http://{server}")
        out.append((parts.hostname or "127.0.0.1", parts.port or 2379))
    return out


def _ipv4(host: str, port: int) -> str | None:
    """The host's IPv4 address (a literal, or what the resolver answers first); None if it has none."""
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])
    except (OSError, IndexError):
        return None


def grpc_target(servers: list[str]) -> str:
    """A gRPC target for ``--etcd-servers``: several endpoints become one round-robin ``ipv4:`` target (host names
    resolved once, here); one endpoint stays as given."""
    endpoints = _endpoints(servers)
    if len(endpoints) > 1:
        addresses = [_ipv4(host, port) for host, port in endpoints]
        if all(addresses):
            return "ipv4:" + ",".join(f"{a}:{p}" for a, (_, p) in zip(addresses, endpoints, strict=True))
    host, port = endpoints[0]
    return f"{host}:{port}"


class EtcdStorage:
    """A connection to etcd and the handful of operations the apiserver performs.

    Several ``servers`` (the members of one cluster) share one gRPC channel that balances over them
    (``round_robin``): a member that goes away leaves the balancer, so later calls go to the others. A read that
    fails with UNAVAILABLE (its member died under it) is sent again, to another member; a write is not (it may
    have been applied), its error goes to the client as kube-apiserver's does. Watches require a leader
    (etcd's ``hasleader`` metadata, as kube's etcd3 client sets it): a watch on a member cut off from the
    majority ends instead of going silent, and the watch cache resumes it from its revision on another member.
    """

    READ_ATTEMPTS = 3

    def __init__(self, servers: list[str], timeout: float = 10.0, tls: EtcdTLS | None = None) -> None:
        self._target = grpc_target(servers)
        self._server_name = _endpoints(servers)[0][0]
        self._tls = (tls or EtcdTLS()) if uses_tls(servers, tls) else None
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._options: list[tuple[str, Any]] = []
        self._watch_channel: grpc.Channel | None = None  # blocking, for the watch readers' threads (WatchStream)
        self._kv: Any = None
        self._watch: Any = None
        self._lease: Any = None

    async def connect(self) -> None:
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", 256 * 1024 * 1024),
                                          ("grpc.keepalive_time_ms", 30_000)]
        if self._target.startswith("ipv4:"):
            options.append(("grpc.lb_policy_name", "round_robin"))
        if self._tls is not None:
            if self._target.startswith("ipv4:"):  # addresses: check the members' certificates for the URLs' host
                options.append(("grpc.ssl_target_name_override", self._server_name))
            self._channel = grpc.aio.secure_channel(self._target, self._tls.credentials(), options=options)
        else:
            self._channel = grpc.aio.insecure_channel(self._target, options=options)
        self._options = options
        self._kv = rpc.KVStub(self._channel)
        self._lease = rpc.LeaseStub(self._channel)
        await self.current_revision()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        if self._watch_channel is not None:
            self._watch_channel.close()
            self._watch_channel = None
            self._watch = None

    def _watch_method(self) -> Any:
        """etcd's Watch on a blocking channel of its own, made at the first watch (processes that never watch start
        no gRPC threads). Called as unary-stream: the one request creates the watch and etcd keeps a watch stream
        open when its client half-closes; each response is then read by the thread iterating the call alone (gRPC's
        single-threaded unary-stream), not handed over by the channel's polling thread — one GIL hand-off per
        response instead of two."""
        if self._watch is None:
            options = [*self._options, (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)]
            if self._tls is not None:
                self._watch_channel = grpc.secure_channel(self._target, self._tls.credentials(), options=options)
            else:
                self._watch_channel = grpc.insecure_channel(self._target, options=options)
            self._watch = self._watch_channel.unary_stream(
                "/etcdserverpb.Watch/Watch", request_serializer=rpc.WatchRequest.SerializeToString,
                response_deserializer=rpc.WatchResponse.FromString)
        return self._watch

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as err:
            raise _storage_error(err) from err

    async def _read(self, request: Any) -> Any:
        """A Range, sent again on UNAVAILABLE (reads are safe to repeat; the balancer picks another member)."""
        for attempt in range(self.READ_ATTEMPTS):
            try:
                return await self._kv.Range(request, timeout=self._timeout)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE or attempt + 1 == self.READ_ATTEMPTS:
                    raise _storage_error(err) from err
                await asyncio.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    # --- reads ----------------------------------------------------------------------------------------------
    async def current_revision(self) -> int:
        resp = await self._read(rpc.RangeRequest(key=b"\0", count_only=True, limit=1))
        return int(resp.header.revision)

    async def get(self, key: bytes) -> KeyValue | None:
        resp = await self._read(rpc.RangeRequest(key=key))
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def list(self, prefix: bytes, *, start: bytes | None = None, revision: int = 0,
                   limit: int = 0) -> tuple[list[KeyValue], int, bool]:
        """Keys under ``prefix`` from ``start`` (inclusive), at ``revision`` (0 = now): (kvs, revision, more)."""
        request = rpc.RangeRequest(key=start or prefix, range_end=prefix_end(prefix), revision=revision,
                                   limit=limit)
        resp = await self._read(request)
        return [_kv(kv) for kv in resp.kvs], int(resp.header.revision), bool(resp.more)

    async def prefix_state(self, prefix: bytes) -> tuple[int, int, int]:
        """(revision, keys under ``prefix``, highest mod_revision among them) in one read: enough for the watch
        cache to tell whether it has seen every change (see ``WatchCache.wait_fresh``)."""
        request = rpc.RangeRequest(key=prefix, range_end=prefix_end(prefix), limit=1, keys_only=True,
                                   sort_order=rpc.RangeRequest.DESCEND, sort_target=rpc.RangeRequest.MOD)
        resp = await self._read(request)
        latest = int(resp.kvs[0].mod_revision) if resp.kvs else 0
        return int(resp.header.revision), int(resp.count), latest

    # --- writes ---------------------------------------------------------------------------------------------
    async def _txn(self, key: bytes, compare: Any, success: Any) -> tuple[bool, Any]:
        request = rpc.TxnRequest(
            compare=[compare],
            success=[success],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
        )
        resp = await self._call(self._kv.Txn, request)
        return bool(resp.succeeded), resp

    async def create(self, key: bytes, value: bytes, lease: int = 0) -> int:
        """Write a new key (under etcd lease ``lease``, if not 0); raises ``KeyExists``. Returns the new
        revision."""
        ok, resp = await self._txn(
            key,
            rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0),
            rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=lease)),
        )
        if not ok:
            raise KeyExists(key.decode())
        return int(resp.header.revision)

    async def update(self, key: bytes, value: bytes, expected_revision: int, lease: int = 0) -> int:
        """Overwrite ``key`` if its mod_revision is ``expected_revision`` (under etcd lease ``lease``, if not 0:
        a put without one detaches the key from any lease); raises ``RevisionMismatch``."""
        ok, resp = await self._txn(
            key,
            rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected_revision),
            rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=lease)),
        )
        if not ok:
            raise RevisionMismatch(self._current_from_failure(resp))
        return int(resp.header.revision)

    async def delete(self, key: bytes, expected_revision: int) -> int:
        """Delete ``key`` if its mod_revision is ``expected_revision``; raises ``RevisionMismatch``."""
        ok, resp = await self._txn(
            key,
            rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected_revision),
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key)),
        )
        if not ok:
            raise RevisionMismatch(self._current_from_failure(resp))
        return int(resp.header.revision)

    async def grant_lease(self, ttl: int) -> int:
        """A new etcd lease of ``ttl`` seconds (etcd raises a shorter one to its minimum); its ID."""
        return int((await self._call(self._lease.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl))).ID)

    async def put_with_ttl(self, key: bytes, value: bytes, ttl: int) -> None:
        """Write ``key`` under a new etcd lease of ``ttl`` seconds: it vanishes unless written again in time (the
        lease it had before no longer holds it, so that one's expiry takes nothing with it)."""
        await self._call(self._kv.Put, rpc.PutRequest(key=key, value=value, lease=await self.grant_lease(ttl)))

    async def delete_key(self, key: bytes) -> None:
        """Delete ``key`` whatever its revision (for keys that are not API objects)."""
        await self._call(self._kv.DeleteRange, rpc.DeleteRangeRequest(key=key))

    @staticmethod
    def _current_from_failure(resp: Any) -> KeyValue | None:
        kvs = resp.responses[0].response_range.kvs
        return _kv(kvs[0]) if kvs else None

    async def compact(self, revision: int, physical: bool = True) -> None:
        """Drop history before ``revision``; ``physical`` waits until the backend has freed it too."""
        await self._call(self._kv.Compact, rpc.CompactionRequest(revision=revision, physical=physical))

    async def claim_compaction(self, key: bytes, version: int, revision: int) -> tuple[bool, int, int]:
        """Write ``revision`` to ``key`` if the key's version is still ``version`` (kube's compactor lease):
        (whether it was written, the key's version now, etcd's revision)."""
        request = rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.VERSION, result=rpc.Compare.EQUAL, version=version)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=str(revision).encode()))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
        )
        resp = await self._call(self._kv.Txn, request)
        if resp.succeeded:
            return True, version + 1, int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        return False, int(kvs[0].version) if kvs else 0, int(resp.header.revision)

    # --- maintenance ----------------------------------------------------------------------------------------
    def _maintenance(self) -> Any:
        return rpc.MaintenanceStub(self._channel)

    async def status(self) -> MemberStatus:
        resp = await self._call(self._maintenance().Status, rpc.StatusRequest())
        return MemberStatus(int(resp.header.member_id), resp.version, int(resp.dbSize), int(resp.dbSizeInUse),
                            int(resp.header.revision))

    async def defragment(self, timeout: float = 300.0) -> None:
        """Rewrite the member's backend without its free pages (it blocks that member's writes meanwhile)."""
        try:
            await self._maintenance().Defragment(rpc.DefragmentRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise Unavailable(f"etcd defragment: {err.code().name}: {err.details()}") from err

    async def alarms(self) -> builtins.list[Alarm]:  # builtins: `list` here is the method above
        resp = await self._call(self._maintenance().Alarm, rpc.AlarmRequest(action=rpc.AlarmRequest.GET))
        return [Alarm(int(a.memberID), rpc.AlarmType.Name(a.alarm)) for a in resp.alarms]

    async def disarm(self, alarm: Alarm) -> None:
        await self._call(self._maintenance().Alarm, rpc.AlarmRequest(
            action=rpc.AlarmRequest.DEACTIVATE, memberID=alarm.member_id, alarm=rpc.AlarmType.Value(alarm.name)))

    # --- watch ----------------------------------------------------------------------------------------------
    def watch(self, prefix: bytes, start_revision: int) -> WatchStream:
        return WatchStream(self._watch_method(), prefix, start_revision)


class WatchStream:
    """One etcd watch over a prefix, as an async iterator of change batches.

    A thread reads the gRPC stream (blocking) and hands each response to the event loop; a batch is every
    response that arrived since the previous batch, in order. Read on the loop (grpc.aio), each response cost two
    loop turns (its read's completion, then the next read started), so while the loop was saturated (a burst of
    pod creates, bindings and status writes) the watch cache fell behind etcd by up to a second, and with it every
    watcher (the scheduler's informer too), although each write returned in tens of milliseconds. kube-apiserver
    likewise reads its etcd watches in goroutines of their own, concurrently with serving.

    (etcd's watch progress requests are not used: before etcd 3.4.25/3.5.8 a progress notification could
    overtake events still in flight — etcd issue 15220 — and Debian ships 3.4.23.)
    """

    _END = object()  # the stream ended without an error

    def __init__(self, method: Any, prefix: bytes, start_revision: int) -> None:
        self._method = method
        self._prefix = prefix
        self._start = start_revision
        self._call: Any = None
        self._lock = threading.Lock()
        self._received: list[Any] = []  # responses (then _END or the error) handed over and not yet taken

    def _read(self, loop: asyncio.AbstractEventLoop, wake: asyncio.Event) -> None:
        """The reader thread: every response, then _END or the error, each handed over as it comes."""
        item: Any
        try:
            for item in self._call:
                self._hand_over(loop, wake, item)
            item = self._END
        except grpc.RpcError as err:
            item = err
        self._hand_over(loop, wake, item)

    def _hand_over(self, loop: asyncio.AbstractEventLoop, wake: asyncio.Event, item: Any) -> None:
        """Append ``item``; wake the loop only when the list was empty (one wake-up for all that comes meanwhile)."""
        with self._lock:
            self._received.append(item)
            first = len(self._received) == 1
        if first:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads this stream any more
                loop.call_soon_threadsafe(wake.set)

    async def batches(self) -> AsyncIterator[list[WatchChange]]:
        """Yields non-empty lists of changes, in revision order."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        # hasleader: etcd ends the watch (UNAVAILABLE) when its member has no leader, rather than letting it hang
        create = rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
            key=self._prefix, range_end=prefix_end(self._prefix), start_revision=self._start, prev_kv=True))
        self._call = self._method(create, metadata=(("hasleader", "true"),))
        threading.Thread(target=self._read, args=(loop, wake), name=f"etcd-watch {self._prefix.decode()}",
                         daemon=True).start()
        try:
            while True:
                await wake.wait()
                wake.clear()
                with self._lock:
                    taken, self._received = self._received, []
                changes: list[WatchChange] = []
                for resp in taken:
                    ended = _watch_ended(resp)
                    if ended is not None:
                        if changes:
                            yield changes
                        if isinstance(ended, StorageError):
                            raise ended
                        return
                    changes.extend(WatchChange("delete" if ev.type == 1 else "put", _kv(ev.kv),
                                               _kv(ev.prev_kv) if ev.HasField("prev_kv") else None)
                                   for ev in resp.events)
                if changes:
                    yield changes
        finally:
            self.cancel()  # the reader thread ends with the iteration, however it ends

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()


def _watch_ended(resp: Any) -> StorageError | object | None:
    """What ends the watch at this response (``WatchStream._END``: a clean end, or the error to raise), or None."""
    if resp is WatchStream._END:
        return resp
    if isinstance(resp, grpc.RpcError):
        code, details = resp.code(), resp.details()  # a grpc.Call as well
        return Unavailable(f"etcd watch: {code.name}: {details}")
    if resp.compact_revision:
        return Compacted(int(resp.compact_revision))
    if resp.canceled:
        return Unavailable(f"etcd watch canceled: {resp.cancel_reason}")
    return None
