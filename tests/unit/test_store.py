"""kubeclient.informer.store: keys, Store writes, Indexer indices kept in step with every write."""

from __future__ import annotations

import pytest

from kubeclient.informer.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    Store,
    field_index_func,
    meta_namespace_key,
    namespace_index_func,
    node_name_index_func,
    split_meta_namespace_key,
)
from kubeclient.types import Object, ObjectKey


def pod(name: str, ns: str = "default", node: str = "", phase: str = "Pending", rv: str = "1") -> Object:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def indexer() -> Indexer:
    return Indexer({NAMESPACE_INDEX: namespace_index_func, NODE_NAME_INDEX: node_name_index_func})


def test_keys_for_namespaced_cluster_scoped_and_tombstones() -> None:
    assert meta_namespace_key(pod("a", "ns1")) == "ns1/a"
    assert meta_namespace_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert meta_namespace_key(DeletedFinalStateUnknown(ObjectKey("ns1/a"), pod("a", "ns1"))) == "ns1/a"
    assert split_meta_namespace_key("ns1/a") == ("ns1", "a")
    assert split_meta_namespace_key("node-1") == (None, "node-1")
    with pytest.raises(ValueError):
        meta_namespace_key({"metadata": {}})


def test_store_writes_return_the_previous_object() -> None:
    store = Store()
    a1, a2 = pod("a", rv="1"), pod("a", rv="2")
    assert store.add(a1) is None
    assert store.update(a2) is a1
    assert store.get_by_key("default/a") is a2
    assert store.get(pod("a")) is a2
    assert "default/a" in store and len(store) == 1
    assert store.delete(pod("a")) is a2
    assert store.delete(pod("a")) is None
    assert store.list() == [] and store.list_keys() == []


def test_replace_swaps_content_and_returns_the_old_content() -> None:
    store = Store()
    a, b = pod("a"), pod("b")
    store.add(a)
    store.add(b)
    c = pod("c")
    previous = store.replace([pod("a", rv="5"), c])
    assert previous == {"default/a": a, "default/b": b}
    assert sorted(store.list_keys()) == ["default/a", "default/c"]
    assert store.get_by_key("default/a")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]


def test_indexer_follows_adds_updates_and_deletes() -> None:
    idx = indexer()
    idx.add(pod("a", node="n1"))
    idx.add(pod("b", node="n1"))
    idx.add(pod("c", "other"))
    assert sorted(o["metadata"]["name"] for o in idx.by_index(NODE_NAME_INDEX, "n1")) == ["a", "b"]
    assert [o["metadata"]["name"] for o in idx.by_index(NODE_NAME_INDEX, "")] == ["c"]
    assert sorted(idx.index_keys(NAMESPACE_INDEX, "default")) == ["default/a", "default/b"]

    idx.update(pod("a", node="n2"))  # moves between index values
    assert [o["metadata"]["name"] for o in idx.by_index(NODE_NAME_INDEX, "n1")] == ["b"]
    assert [o["metadata"]["name"] for o in idx.by_index(NODE_NAME_INDEX, "n2")] == ["a"]

    idx.delete(pod("b"))
    assert idx.by_index(NODE_NAME_INDEX, "n1") == []
    assert "n1" not in idx.list_index_values(NODE_NAME_INDEX)  # empty buckets are dropped
    assert sorted(idx.list_index_values(NAMESPACE_INDEX)) == ["default", "other"]


def test_replace_rebuilds_indices() -> None:
    idx = indexer()
    idx.add(pod("a", node="n1"))
    idx.replace([pod("b", node="n2")])
    assert idx.by_index(NODE_NAME_INDEX, "n1") == []
    assert [o["metadata"]["name"] for o in idx.by_index(NODE_NAME_INDEX, "n2")] == ["b"]


def test_add_indexers_indexes_existing_content_and_rejects_duplicates() -> None:
    idx = Indexer()
    idx.add(pod("a", phase="Running"))
    idx.add(pod("b", phase="Pending"))
    idx.add_indexers({"phase": field_index_func("status.phase")})
    assert [o["metadata"]["name"] for o in idx.by_index("phase", "Running")] == ["a"]
    idx.update(pod("b", phase="Running"))
    assert len(idx.by_index("phase", "Running")) == 2
    with pytest.raises(ValueError):
        idx.add_indexers({"phase": field_index_func("status.phase")})
    with pytest.raises(KeyError):
        idx.by_index("nope", "x")


def test_index_returns_objects_sharing_a_value() -> None:
    idx = indexer()
    idx.add(pod("a", node="n1"))
    idx.add(pod("b", node="n1"))
    idx.add(pod("c", node="n2"))
    assert sorted(o["metadata"]["name"] for o in idx.index(NODE_NAME_INDEX, pod("x", node="n1"))) == ["a", "b"]


def test_cluster_scoped_objects_are_not_namespace_indexed() -> None:
    idx = indexer()
    idx.add({"metadata": {"name": "node-1"}})
    assert idx.list_index_values(NAMESPACE_INDEX) == []
    assert idx.get_by_key("node-1") is not None
