"""LIST: every label selector operator, field selectors, pagination and resourceVersion semantics."""

from __future__ import annotations

import httpx
import pytest

from support.builders import make_pod


@pytest.fixture()
def labelled(client: httpx.Client, ns: str) -> str:
    pods = [
        ("a", {"app": "web", "tier": "front", "env": "prod"}),
        ("b", {"app": "web", "tier": "back"}),
        ("c", {"app": "db", "env": "dev"}),
        ("d", {}),
    ]
    for name, labels in pods:
        resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod(name).label(**labels).build())
        assert resp.status_code == 201, resp.text
    return ns


def names(client: httpx.Client, ns: str, **params: str) -> list[str]:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods", params=params)
    assert resp.status_code == 200, resp.text
    return [p["metadata"]["name"] for p in resp.json()["items"]]


@pytest.mark.parametrize("selector,expected", [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("tier in (front,back)", ["a", "b"]),
    ("env notin (prod)", ["b", "c", "d"]),
    ("env", ["a", "c"]),
    ("!env", ["b", "d"]),
    ("app=web,tier=back", ["b"]),
    ("app in (web, db), !tier", ["c"]),
])
def test_label_selector_operators(client: httpx.Client, labelled: str, selector: str, expected: list[str]) -> None:
    assert names(client, labelled, labelSelector=selector) == expected


def test_field_selectors(client: httpx.Client, ns: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("on-n1").node("n1").build())
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("unbound").build())
    assert names(client, ns, fieldSelector="spec.nodeName=n1") == ["on-n1"]
    assert names(client, ns, fieldSelector="spec.nodeName=") == ["unbound"]
    assert names(client, ns, fieldSelector="spec.nodeName!=n1") == ["unbound"]
    assert names(client, ns, fieldSelector="metadata.name=unbound") == ["unbound"]
    assert names(client, ns, fieldSelector="status.phase=Pending") == ["on-n1", "unbound"]
    assert names(client, ns, fieldSelector="spec.schedulerName=default-scheduler,metadata.name=on-n1") == ["on-n1"]
    all_ns = client.get("/api/v1/pods", params={"fieldSelector": f"metadata.namespace={ns}"}).json()
    assert sorted(p["metadata"]["name"] for p in all_ns["items"]) == ["on-n1", "unbound"]
    resp = client.get(f"/api/v1/namespaces/{ns}/pods", params={"fieldSelector": "spec.bogus=x"})
    assert resp.status_code == 400


def test_node_field_selector_unschedulable(client: httpx.Client) -> None:
    from support.builders import make_node

    for name, unschedulable in [("fs-node-a", True), ("fs-node-b", False)]:
        node = make_node(name)
        node["spec"] = {"unschedulable": unschedulable}
        assert client.post("/api/v1/nodes", json=node).status_code == 201
    cordoned = client.get("/api/v1/nodes", params={"fieldSelector": "spec.unschedulable=true"}).json()["items"]
    assert "fs-node-a" in [n["metadata"]["name"] for n in cordoned]
    assert "fs-node-b" not in [n["metadata"]["name"] for n in cordoned]


def test_pagination_walks_one_snapshot(client: httpx.Client, ns: str) -> None:
    for i in range(7):
        client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod(f"p{i}").build())
    seen: list[str] = []
    first = client.get(f"/api/v1/namespaces/{ns}/pods", params={"limit": 3}).json()
    rv = first["metadata"]["resourceVersion"]
    seen += [p["metadata"]["name"] for p in first["items"]]
    token = first["metadata"]["continue"]
    # A pod created mid-walk is not part of the snapshot the pages come from.
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("p9-late").build())
    while token:
        page = client.get(f"/api/v1/namespaces/{ns}/pods", params={"limit": 3, "continue": token}).json()
        assert page["metadata"]["resourceVersion"] == rv
        seen += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert seen == [f"p{i}" for i in range(7)]


def test_pagination_with_selector(client: httpx.Client, labelled: str) -> None:
    """Pages hold up to `limit` matching objects; as in Kubernetes, a token is returned while etcd has more keys,
    so the walk may end on an empty page."""
    seen: list[list[str]] = []
    params = {"limit": "1", "labelSelector": "app=web"}
    while True:
        page = client.get(f"/api/v1/namespaces/{labelled}/pods", params=params).json()
        seen.append([p["metadata"]["name"] for p in page["items"]])
        token = page["metadata"].get("continue")
        if not token:
            break
        params["continue"] = token
    assert seen[0] == ["a"] and seen[1] == ["b"]
    assert sum(seen, []) == ["a", "b"]
    assert all(len(names) <= 1 for names in seen)


def test_bad_continue_token_is_400(client: httpx.Client, ns: str) -> None:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods", params={"limit": 1, "continue": "garbage"})
    assert resp.status_code == 400


def test_list_reads_its_own_writes(client: httpx.Client, ns: str) -> None:
    """A LIST right after a write (no resourceVersion: consistent) always includes it."""
    for i in range(20):
        client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod(f"rw{i}").build())
        assert f"rw{i}" in names(client, ns)


def test_resource_version_semantics(client: httpx.Client, ns: str) -> None:
    created = client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("x").build()).json()
    rv = created["metadata"]["resourceVersion"]
    # resourceVersion=rv (NotOlderThan) waits for the cache to reach the write; "0" is any version the cache has,
    # which kube-apiserver does not promise includes a write just made, so it is asked only after that.
    assert "x" in names(client, ns, resourceVersion=rv)
    assert "x" in names(client, ns, resourceVersion="0")
    exact = client.get(f"/api/v1/namespaces/{ns}/pods", params={"resourceVersion": rv,
                                                                  "resourceVersionMatch": "Exact"}).json()
    assert exact["metadata"]["resourceVersion"] == rv
    before = client.get(f"/api/v1/namespaces/{ns}/pods",
                        params={"resourceVersion": str(int(rv) - 1), "resourceVersionMatch": "Exact"}).json()
    assert "x" not in [p["metadata"]["name"] for p in before["items"]]
