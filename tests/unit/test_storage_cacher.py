"""The watch cache's object: only the encoding is kept; each ``obj`` is a fresh decode the caller owns."""

from __future__ import annotations

import orjson

from apiserver.storage.cacher import CachedObject


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
