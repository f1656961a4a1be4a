"""VolumeBinding and VolumeZone: claims missing, unbound, bound to a volume of another node or zone, delayed."""

from __future__ import annotations

from typing import Any

from scheduler.framework import Code, CycleState, NodeInfo
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumezone import VolumeZone


class Lister:
    def __init__(self, claims: list[dict[str, Any]], volumes: list[dict[str, Any]],
                 classes: list[dict[str, Any]]) -> None:
        self._claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        self._volumes = volumes
        self._classes = {c["metadata"]["name"]: c for c in classes}

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._claims.get((namespace, name))

    def volumes(self) -> list[dict[str, Any]]:
        return self._volumes

    def storage_class(self, name: str) -> dict[str, Any] | None:
        return self._classes.get(name)


WFFC = {"metadata": {"name": "local"}, "provisioner": "kubelab.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer"}
STATIC = {"metadata": {"name": "static"}, "provisioner": "kubernetes.io/no-provisioner",
          "volumeBindingMode": "WaitForFirstConsumer"}
IMMEDIATE = {"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "volumeBindingMode": "Immediate"}


def claim(name: str, storage_class: str = "local", volume: str = "", **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "annotations": annotations},
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"], "volumeName": volume,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def volume(name: str, node: str | None = None, storage_class: str = "local", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            "storageClassName": storage_class}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec, "status": {"phase": "Available"}}


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}})


def pod(*claims: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}], "volumes": [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]}}


def plugin(lister: Lister) -> VolumeBinding:
    binding = VolumeBinding()
    binding.volume_lister = lister
    return binding


def test_a_missing_claim_and_an_unbound_immediate_claim_are_unresolvable() -> None:
    binding = plugin(Lister([claim("fast", "fast")], [], [IMMEDIATE]))
    missing = binding.pre_filter(CycleState(), pod("nope"), [])
    assert missing.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert missing.reasons == ('persistentvolumeclaim "nope" not found',)
    unbound = binding.pre_filter(CycleState(), pod("fast"), [])
    assert unbound.reasons == ("pod has unbound immediate PersistentVolumeClaims",)


def test_a_bound_volume_pins_the_pod_to_its_node() -> None:
    binding = plugin(Lister([claim("data", volume="pv1")], [volume("pv1", "n1")], [WFFC]))
    state = CycleState()
    assert binding.pre_filter(state, pod("data"), []).ok
    assert binding.filter(state, pod("data"), node("n1")).ok
    assert binding.filter(state, pod("data"), node("n2")).reasons == ("node(s) had volume node affinity conflict",)


def test_a_delayed_claim_fits_where_a_volume_or_the_provisioner_can_serve_it() -> None:
    static = plugin(Lister([claim("data", "static")], [volume("pv1", "n1", "static")], [STATIC]))
    state = CycleState()
    assert static.filter(state, pod("data"), node("n1")).ok
    assert static.filter(state, pod("data"), node("n2")).reasons == (
        "node(s) didn't find available persistent volumes to bind",)
    provisioned = plugin(Lister([claim("data")], [], [WFFC]))
    assert provisioned.filter(CycleState(), pod("data"), node("n2")).ok
    patches = provisioned.pre_bind(pod("data"), node("n2"))
    assert [(p.name, p.patch) for p in patches] == [
        ("data", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n2"}}})]


def test_two_claims_never_count_the_same_volume() -> None:
    binding = plugin(Lister([claim("a", "static"), claim("b", "static")], [volume("pv1", "n1", "static")],
                            [STATIC]))
    assert not binding.filter(CycleState(), pod("a", "b"), node("n1")).ok


def test_volume_zone_keeps_a_pod_in_its_volumes_zone() -> None:
    zone = VolumeZone()
    zone.volume_lister = Lister([claim("data", volume="pv1")],
                                [volume("pv1", **{"topology.kubernetes.io/zone": "a__b"})], [WFFC])
    state = CycleState()
    assert zone.filter(state, pod("data"), node("n1", **{"topology.kubernetes.io/zone": "b"})).ok
    assert zone.filter(state, pod("data"), node("n2", **{"topology.kubernetes.io/zone": "c"})).reasons == (
        "node(s) had no available volume zone",)
    assert zone.filter(CycleState(), pod(), node("n2")).ok
