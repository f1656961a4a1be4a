"""The watch cache's object: only the encoding is kept; each ``obj`` is a fresh decode the caller owns."""

from __future__ import annotations

import orjson

from apiserver.storage.cacher import CachedObject, WatchCache


def cached(obj: dict) -> CachedObject:
    return CachedObject("ns/a", obj, orjson.dumps(obj), 7, obj["metadata"].get("labels") or {},
                        {"metadata.namespace": "ns"})


def test_obj_is_the_encoded_object_decoded_afresh_each_time() -> None:
    pod = {"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}}, "spec": {"nodeName": "n1"}}
    co = cached(pod)
    first = co.obj
    assert first == pod and first is not pod
    first["spec"]["nodeName"] = "changed"  # a caller's working copy: never seen by the next reader
    pod["metadata"]["name"] = "changed too"  # nor is the dict it was made from
    assert co.obj == {"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}}, "spec": {"nodeName": "n1"}}
    assert co.obj is not co.obj


def test_no_decoded_copy_is_kept() -> None:
    co = cached({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}] * 50}})
    assert not hasattr(co, "__dict__")
    assert all(not isinstance(getattr(co, slot), dict) or slot in ("labels", "fields") for slot in co.__slots__)
    assert co.raw == orjson.dumps(co.obj) and co.rv == 7 and not co.stale


def test_a_write_whose_event_was_already_applied_is_not_kept_for_it() -> None:
    """``prime`` offers a write's object to its own watch event; when the cache has already applied that event
    (most writes: etcd's watch stream answers as soon as the transaction's reply) the object is not kept, as
    nothing would take it and each such copy was held until 10,000 had piled up (~95 MB of apiserver RSS at
    10,000 pods written three times each)."""
    cache = WatchCache(None, b"/registry/pods/", lambda key, value, rv: cached(orjson.loads(value)),
                       lambda co, rv: co, capacity=10)
    cache.rv = 10
    applied, coming = cached({"metadata": {"name": "a", "namespace": "ns"}}), cached({"metadata": {"name": "b"}})
    applied.rv, coming.rv = 9, 11
    cache.prime(b"/registry/pods/ns/a", applied)
    cache.prime(b"/registry/pods/ns/b", coming)
    assert list(cache._primed) == [(b"/registry/pods/ns/b", 11)]
