"""The official `kubernetes` Python client (and `kubernetes_asyncio`) against the apiserver: CRUD with
selectors and pagination, every response deserialising into the client's models, watch with resume and 410."""

from __future__ import annotations

import asyncio
import base64
import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException

from conftest import api_only
from kubelab.etcd import EtcdServer


def pod(name: str, labels: dict[str, str] | None = None, node: str | None = None) -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1PodSpec(node_name=node, containers=[k8s.V1Container(
            name="c", image="busybox", ports=[k8s.V1ContainerPort(container_port=8080)],
            resources=k8s.V1ResourceRequirements(requests={"cpu": "0.5", "memory": "64Mi"}))]),
    )


def test_pod_crud_and_models(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    created = core.create_namespaced_pod(ns, pod("p1", {"app": "web"}))
    assert isinstance(created, k8s.V1Pod)
    assert created.metadata.creation_timestamp is not None  # a datetime, parsed by the client
    assert created.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "64Mi"}  # canonical
    assert created.status.phase == "Pending" and created.status.qos_class == "Burstable"
    assert created.spec.tolerations[0].toleration_seconds == 300

    read = core.read_namespaced_pod("p1", ns)
    assert read.metadata.uid == created.metadata.uid
    patched = core.patch_namespaced_pod("p1", ns, {"metadata": {"labels": {"tier": "front"}}})
    assert patched.metadata.labels == {"app": "web", "tier": "front"}
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_pod("p1", ns, read)  # read before the patch: a stale resourceVersion
    assert conflict.value.status == 409
    current = core.read_namespaced_pod("p1", ns)
    current.metadata.labels = {"app": "web", "replaced": "yes"}
    replaced = core.replace_namespaced_pod("p1", ns, current)
    assert replaced.metadata.labels == {"app": "web", "replaced": "yes"}
    assert int(replaced.metadata.resource_version) > int(current.metadata.resource_version)

    status = core.read_namespaced_pod_status("p1", ns)
    assert status.status.phase == "Pending"
    core.delete_namespaced_pod("p1", ns)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("p1", ns)
    assert missing.value.status == 404


def test_python_client_string_data(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    created = core.create_namespaced_secret(ns, k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="creds"), string_data={"user": "admin", "token": "t0k3n"}))
    assert isinstance(created, k8s.V1Secret)
    assert created.type == "Opaque" and created.string_data is None
    assert {k: base64.b64decode(v) for k, v in created.data.items()} == {"user": b"admin", "token": b"t0k3n"}
    read = core.read_namespaced_secret("creds", ns)
    assert base64.b64decode(read.data["token"]) == b"t0k3n"
    listed = core.list_namespaced_secret(ns)
    assert [s.metadata.name for s in listed.items] == ["creds"]
    core.delete_namespaced_secret("creds", ns)


def test_list_selectors_and_pagination(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_pod(ns, pod(f"p{i}", {"parity": "even" if i % 2 == 0 else "odd"},
                                           node="n1" if i < 2 else None))
    assert [p.metadata.name for p in core.list_namespaced_pod(ns, label_selector="parity=odd").items] == ["p1", "p3"]
    assert [p.metadata.name for p in core.list_namespaced_pod(ns, field_selector="spec.nodeName=n1").items] == \
        ["p0", "p1"]
    names: list[str] = []
    token = None
    while True:
        page = core.list_namespaced_pod(ns, limit=2, _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]
    all_pods = core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={ns}")
    assert len(all_pods.items) == 5


def test_nodes_events_workloads(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    apps = k8s.AppsV1Api(api)
    node = k8s.V1Node(metadata=k8s.V1ObjectMeta(name=f"{ns}-n"),
                      status=k8s.V1NodeStatus(capacity={"cpu": "2", "memory": "4Gi"},
                                              allocatable={"cpu": "2", "memory": "4Gi"}))
    created = core.create_node(node)
    assert created.status.allocatable["memory"] == "4Gi"
    core.patch_node(f"{ns}-n", {"spec": {"unschedulable": True}})
    assert core.read_node(f"{ns}-n").spec.unschedulable is True
    core.delete_node(f"{ns}-n")

    labels = {"app": "w"}
    template = k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels),
                                     spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="busybox")]))
    rc = core.create_namespaced_replication_controller(ns, k8s.V1ReplicationController(
        metadata=k8s.V1ObjectMeta(name="rc"), spec=k8s.V1ReplicationControllerSpec(replicas=2, selector=labels,
                                                                                   template=template)))
    assert rc.spec.replicas == 2
    rs = apps.create_namespaced_replica_set(ns, k8s.V1ReplicaSet(
        metadata=k8s.V1ObjectMeta(name="rs"),
        spec=k8s.V1ReplicaSetSpec(replicas=1, selector=k8s.V1LabelSelector(match_labels=labels), template=template)))
    assert rs.spec.selector.match_labels == labels
    deploy = apps.create_namespaced_deployment(ns, k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="d"),
        spec=k8s.V1DeploymentSpec(replicas=1, selector=k8s.V1LabelSelector(match_labels=labels), template=template)))
    assert deploy.spec.strategy.rolling_update.max_surge == "25%"  # int-or-string, defaulted
    scale = apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 3}})
    assert scale.spec.replicas == 3
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 3
    rc_scale = core.read_namespaced_replication_controller_scale("rc", ns)
    assert rc_scale.status.selector == "app=w"

    event = core.create_namespaced_event(ns, k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(name="e1"), involved_object=k8s.V1ObjectReference(kind="Pod", name="x",
                                                                                       namespace=ns),
        reason="Testing", message="hello", type="Normal"))
    assert event.reason == "Testing"
    found = core.list_namespaced_event(ns, field_selector="involvedObject.name=x,reason=Testing").items
    assert [e.message for e in found] == ["hello"]


def test_watch_stream_in_order_and_resume(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    start_rv = core.list_namespaced_pod(ns).metadata.resource_version

    def churn() -> None:
        time.sleep(0.3)
        core.create_namespaced_pod(ns, pod("w"))
        core.patch_namespaced_pod("w", ns, {"metadata": {"labels": {"x": "1"}}})
        core.delete_namespaced_pod("w", ns)

    thread = threading.Thread(target=churn)
    thread.start()
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=start_rv, timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name, event["object"].metadata.resource_version))
        if len(seen) == 3:
            w.stop()
    thread.join()
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    # Resume from the first event's resourceVersion: only what came after it.
    resumed = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=seen[0][2], timeout_seconds=5):
        resumed.append(event["type"])
        if len(resumed) == 2:
            w.stop()
    assert resumed == ["MODIFIED", "DELETED"]


def test_watch_410_then_relist() -> None:
    """After etcd compaction a watch from an old resourceVersion fails with 410; the client relists and
    watches again from the list's resourceVersion, as its docs prescribe. Its own cluster: compacting the session's
    etcd would take the history later tests replay (kubelab trace)."""
    with api_only("--watch-cache-size", "2") as cluster:
        _watch_410_then_relist(cluster.api_url, cluster.running.etcd.members[0])


def _watch_410_then_relist(api_url: str, etcd: EtcdServer) -> None:
    from apiserver.storage.etcd3 import EtcdStorage

    cfg = k8s.Configuration()
    cfg.host = api_url
    with k8s.ApiClient(cfg) as api_client:
        core = k8s.CoreV1Api(api_client)
        ns = core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(generate_name="w410-")))
        name = ns.metadata.name
        old_rv = core.create_namespaced_pod(name, pod("a")).metadata.resource_version
        for i in range(4):
            core.patch_namespaced_pod("a", name, {"metadata": {"labels": {"i": str(i)}}})

        async def compact() -> None:
            storage = EtcdStorage([etcd.url])
            await storage.connect()
            await storage.compact(await storage.current_revision())
            await storage.close()

        asyncio.run(compact())
        with pytest.raises(ApiException) as gone:
            for _ in watch.Watch().stream(core.list_namespaced_pod, name, resource_version=old_rv,
                                          timeout_seconds=5):
                pass
        assert gone.value.status == 410
        listed = core.list_namespaced_pod(name)
        assert [p.metadata.labels["i"] for p in listed.items] == ["3"]
        core.create_namespaced_pod(name, pod("b"))
        events = []
        w = watch.Watch()
        for event in w.stream(core.list_namespaced_pod, name, resource_version=listed.metadata.resource_version,
                              timeout_seconds=5):
            events.append((event["type"], event["object"].metadata.name))
            w.stop()
        assert events == [("ADDED", "b")]


async def test_kubernetes_asyncio_list_and_watch(api_url: str, ns: str) -> None:
    from kubernetes_asyncio import client as aclient
    from kubernetes_asyncio import watch as awatch

    cfg = aclient.Configuration()
    cfg.host = api_url
    async with aclient.ApiClient(cfg) as api_client:
        core = aclient.CoreV1Api(api_client)
        await core.create_namespaced_pod(ns, {"metadata": {"name": "async-a"},
                                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        listed = await core.list_namespaced_pod(ns)
        assert [p.metadata.name for p in listed.items] == ["async-a"]

        async def later() -> None:
            await asyncio.sleep(0.3)
            await core.create_namespaced_pod(ns, {"metadata": {"name": "async-b"},
                                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}})

        task = asyncio.create_task(later())
        w = awatch.Watch()
        seen = []
        async for event in w.stream(core.list_namespaced_pod, ns, resource_version=listed.metadata.resource_version,
                                    timeout_seconds=10):
            seen.append((event["type"], event["object"].metadata.name))
            w.stop()
        await task
        assert seen == [("ADDED", "async-b")]
