"""controllers.endpoints and controllers.endpointslice over the FakeAPIServer: addresses of the selected pods
(ready, not ready, terminating, publishNotReadyAddresses), named target ports, selectorless Services left alone,
Endpoints of a deleted Service removed, slices named ``<svc>-…`` with their labels and owner, split at the limit;
hand-written Endpoints of a Service without selector mirrored as slices."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.endpoints import EndpointController, endpoint_subsets
from controllers.endpointslice import EndpointSliceController, desired_slices
from controllers.endpointslicemirroring import EndpointSliceMirroringController, mirrored_slices
from controllers.manager import enabled_controllers
from kubeclient import ENDPOINT_SLICES, ENDPOINTS, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until

NS = "default"


def service(name: str = "web", selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    ports = spec.pop("ports", [{"port": 80, "targetPort": 8080, "protocol": "TCP"}])
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"} if selector is None else selector, "ports": ports,
                     "clusterIP": "10.96.0.10", **spec}}


def pod(name: str, ip: str = "127.0.0.1", ready: bool = True, node: str = "node01", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": {"app": "web"}, **meta},
            "spec": {"nodeName": node, "containers": [{"name": "c", "ports": [
                {"name": "http", "containerPort": 8081, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def ips(subset: dict[str, Any], field: str = "addresses") -> list[str]:
    return [a["targetRef"]["name"] for a in subset.get(field, [])]


# --- the pure parts ------------------------------------------------------------------------------------------


def test_subsets_split_ready_and_not_ready_and_skip_unfit_pods() -> None:
    done = pod("done")
    done["status"]["phase"] = "Succeeded"
    no_ip = pod("pending")
    del no_ip["status"]["podIP"]
    pods = [pod("b"), pod("a"), pod("slow", ready=False), pod("going", deletionTimestamp="2024-01-01T00:00:00Z"),
            done, no_ip]
    [subset] = endpoint_subsets(service(), pods)
    assert ips(subset) == ["a", "b"] and ips(subset, "notReadyAddresses") == ["slow"]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert subset["addresses"][0] == {"ip": "127.0.0.1", "nodeName": "node01", "targetRef": {
        "kind": "Pod", "namespace": NS, "name": "a", "uid": "uid-a"}}


def test_publish_not_ready_addresses_takes_every_pod_as_ready() -> None:
    svc = service(publishNotReadyAddresses=True)
    [subset] = endpoint_subsets(svc, [pod("slow", ready=False), pod("going", deletionTimestamp="2024-01-01T00:00:00Z")])
    assert ips(subset) == ["going", "slow"] and "notReadyAddresses" not in subset


def test_named_target_port_resolves_per_pod_and_repacks_subsets() -> None:
    svc = service(ports=[{"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"},
                         {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"}])
    other = pod("other")
    other["spec"]["containers"][0]["ports"] = []
    subsets = endpoint_subsets(svc, [pod("a"), other])
    assert [(ips(s), [p["name"] for p in s["ports"]]) for s in subsets] == [
        (["a"], ["web"]), (["a", "other"], ["metrics"])]
    assert subsets[0]["ports"] == [{"name": "web", "port": 8081, "protocol": "TCP"}]
    both = endpoint_subsets(svc, [pod("a"), pod("b")])
    assert [(ips(s), [p["name"] for p in s["ports"]]) for s in both] == [(["a", "b"], ["metrics", "web"])]


def test_slices_mark_conditions_and_split_at_the_limit() -> None:
    pods = [pod(f"p{i}") for i in range(5)] + [pod("slow", ready=False),
                                              pod("going", deletionTimestamp="2024-01-01T00:00:00Z")]
    slices = desired_slices(service(), pods, max_endpoints_per_slice=3)
    assert [(t, [e["targetRef"]["name"] for e in eps]) for t, _, eps in slices] == [
        ("IPv4", ["going", "p0", "p1"]), ("IPv4", ["p2", "p3", "p4"]), ("IPv4", ["slow"])]
    by_name = {e["targetRef"]["name"]: e for _, _, eps in slices for e in eps}
    assert by_name["going"]["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert by_name["slow"]["conditions"] == {"ready": False, "serving": False, "terminating": False}
    assert by_name["p0"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert slices[0][1] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    assert desired_slices(service(), []) == [("IPv4", [], [])]


# --- the endpoint controller ---------------------------------------------------------------------------------


def endpoint_controller(cs: Clientset, factory: InformerFactory) -> EndpointController:
    return EndpointController(cs, factory)


def endpoints_of(fake: FakeAPIServer, name: str = "web") -> dict[str, Any] | None:
    return next((e for e in fake.objects(ENDPOINTS, NS) if e["metadata"]["name"] == name), None)


def ready_names(fake: FakeAPIServer) -> list[str]:
    ep = endpoints_of(fake)
    return [] if ep is None else sorted(n for s in ep.get("subsets", []) for n in ips(s))


async def test_endpoints_follow_pods_and_go_with_the_service() -> None:
    async with running(endpoint_controller) as (fake, cs):
        await cs.services.create(service(), NS)
        await until(lambda: endpoints_of(fake) is not None)
        assert "subsets" not in endpoints_of(fake) and endpoints_of(fake)["metadata"]["labels"] == {"team": "a"}
        for name in ("a", "b", "c"):
            await cs.pods.create(pod(name), NS)
        await until(lambda: ready_names(fake) == ["a", "b", "c"])
        await cs.pods.delete("b", NS)  # graceful: terminating pods leave the Endpoints at once
        await until(lambda: ready_names(fake) == ["a", "c"])
        unready = pod("c", ready=False)
        unready["metadata"]["resourceVersion"] = (await cs.pods.get("c", NS))["metadata"]["resourceVersion"]
        await cs.pods.update_status(unready)
        await until(lambda: ready_names(fake) == ["a"])
        await cs.endpoints.delete("web", NS)
        await until(lambda: ready_names(fake) == ["a"])
        await cs.services.delete("web", NS)
        await until(lambda: endpoints_of(fake) is None)


async def test_selectorless_services_keep_user_endpoints_and_leftovers_go() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.services.create(service("manual", selector={}), NS)
    user = {"metadata": {"name": "manual"}, "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 5}]}]}
    await cs.endpoints.create(user, NS)
    await cs.endpoints.create({"metadata": {"name": "orphan"}}, NS)
    async with running(endpoint_controller, fake):
        await until(lambda: endpoints_of(fake, "orphan") is None)
        await asyncio.sleep(0.2)
        assert endpoints_of(fake, "manual")["subsets"] == user["subsets"]


# --- the endpointslice controller ----------------------------------------------------------------------------


def slice_controller(cs: Clientset, factory: InformerFactory) -> EndpointSliceController:
    return EndpointSliceController(cs, factory, max_endpoints_per_slice=2)


def slices(fake: FakeAPIServer) -> list[dict[str, Any]]:
    return sorted(fake.objects(ENDPOINT_SLICES, NS), key=lambda s: s["metadata"]["name"])


def slice_pods(fake: FakeAPIServer) -> list[str]:
    return sorted(e["targetRef"]["name"] for s in slices(fake) for e in s["endpoints"])


async def test_slices_are_created_split_and_shrunk_without_duplicates() -> None:
    async with running(slice_controller) as (fake, cs):
        uid = (await cs.services.create(service(), NS))["metadata"]["uid"]
        await until(lambda: len(slices(fake)) == 1)
        placeholder = slices(fake)[0]
        assert placeholder["metadata"]["name"].startswith("web-") and placeholder["endpoints"] == []
        assert placeholder["metadata"]["labels"] == {"team": "a", "kubernetes.io/service-name": "web",
                                                     "endpointslice.kubernetes.io/managed-by":
                                                         "endpointslice-controller.k8s.io"}
        assert placeholder["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "Service", "name": "web", "uid": uid, "controller": True,
            "blockOwnerDeletion": True}]
        for name in ("a", "b", "c"):
            await cs.pods.create(pod(name), NS)
        await until(lambda: slice_pods(fake) == ["a", "b", "c"])
        await asyncio.sleep(0.2)
        assert len(slices(fake)) == 2 and placeholder["metadata"]["name"] in [s["metadata"]["name"]
                                                                              for s in slices(fake)]
        await cs.pods.delete("c", NS)  # graceful: terminating, still in its slice
        await until(lambda: any(e["conditions"] == {"ready": False, "serving": True, "terminating": True}
                                for s in slices(fake) for e in s["endpoints"]))
        await cs.pods.delete("c", NS, grace_period_seconds=0)
        await cs.pods.delete("b", NS, grace_period_seconds=0)
        await until(lambda: slice_pods(fake) == ["a"] and len(slices(fake)) == 1)
        creates = [a for a in fake.actions if a.verb == "POST" and "endpointslices" in a.path]
        assert len(creates) == 2


async def test_slices_leave_selectorless_services_alone_and_come_back_when_deleted() -> None:
    async with running(slice_controller) as (fake, cs):
        await cs.services.create(service("manual", selector={}), NS)
        await cs.services.create(service(), NS)
        await cs.pods.create(pod("a"), NS)
        await until(lambda: slice_pods(fake) == ["a"])
        await cs.endpoint_slices.delete(slices(fake)[0]["metadata"]["name"], NS)
        await until(lambda: slice_pods(fake) == ["a"])
        assert all(s["metadata"]["labels"]["kubernetes.io/service-name"] == "web" for s in slices(fake))


def test_both_controllers_are_on_by_default() -> None:
    names = ["endpoints-controller", "endpointslice-controller", "endpointslice-mirroring-controller"]
    assert set(names) <= set(enabled_controllers(["*"]))
    assert enabled_controllers(["endpoint", "endpointslice", "endpointslicemirroring"]) == names
    assert enabled_controllers(["endpoint-controller"]) == ["endpoints-controller"]


# --- the endpointslice mirroring controller ------------------------------------------------------------------


def mirroring_controller(cs: Clientset, factory: InformerFactory) -> EndpointSliceMirroringController:
    return EndpointSliceMirroringController(cs, factory)


def test_mirrored_slices_keep_readiness_and_group_by_family_and_ports() -> None:
    ep = {"metadata": {"name": "db", "namespace": NS, "uid": "uid-db"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}, {"ip": "fd00::1"}],
         "notReadyAddresses": [{"ip": "10.0.0.2", "hostname": "db-2"}], "ports": [{"port": 5432, "name": "pg"}]},
        {"addresses": [{"ip": "10.0.0.3"}], "ports": [{"port": 9187, "protocol": "TCP"}]}]}
    got = mirrored_slices(ep)
    assert [(t, [p["port"] for p in ports], [e["addresses"][0] for e in eps]) for t, ports, eps in got] == [
        ("IPv4", [5432], ["10.0.0.1", "10.0.0.2"]), ("IPv4", [9187], ["10.0.0.3"]), ("IPv6", [5432], ["fd00::1"])]
    assert got[0][2] == [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "nodeName": "n1"},
                         {"addresses": ["10.0.0.2"], "conditions": {"ready": False}, "hostname": "db-2"}]
    assert got[0][1] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]


async def test_user_endpoints_are_mirrored_while_the_service_has_no_selector() -> None:
    async with running(mirroring_controller) as (fake, cs):
        await cs.services.create(service("db", selector={}), NS)
        user = {"metadata": {"name": "db", "labels": {"tier": "data"},
                             "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "b"}},
                "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 5432, "protocol": "TCP"}]}]}
        ep = await cs.endpoints.create(user, NS)
        await until(lambda: len(slices(fake)) == 1)
        [mirrored] = slices(fake)
        assert mirrored["metadata"]["labels"] == {"tier": "data", "kubernetes.io/service-name": "db",
                                                  "endpointslice.kubernetes.io/managed-by":
                                                      "endpointslicemirroring-controller.k8s.io"}
        assert mirrored["metadata"]["annotations"] == {"a": "b"}
        assert mirrored["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
        assert mirrored["metadata"]["ownerReferences"][0]["uid"] == ep["metadata"]["uid"]
        assert mirrored["endpoints"] == [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}]
        await cs.services.create(service("web"), NS)  # a selecting Service's Endpoints are not mirrored
        await cs.endpoints.create({"metadata": {"name": "web"}, "subsets": user["subsets"]}, NS)
        svc = await cs.services.get("db", NS)
        svc["spec"]["selector"] = {"app": "db"}
        await cs.services.update(svc)
        await until(lambda: slices(fake) == [])
