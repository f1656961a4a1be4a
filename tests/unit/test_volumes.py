"""apimachinery.volumes: which volume serves a claim (the binder's and the scheduler's shared rule)."""

from __future__ import annotations

from typing import Any

from apimachinery.volumes import find_matching_volume, is_bound_to, node_affinity_matches, pod_claim_names


def pv(name: str, size: str, *modes: str, storage_class: str = "", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **extra.pop("metadata", {})},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes or ["ReadWriteOnce"]),
                     "storageClassName": storage_class, **extra}, "status": {"phase": "Available"}}


def pvc(size: str, *modes: str, storage_class: str = "", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
            "spec": {"accessModes": list(modes or ["ReadWriteOnce"]), "storageClassName": storage_class,
                     "resources": {"requests": {"storage": size}}, **spec}}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def on_node(name: str) -> dict[str, Any]:
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}]}}


def test_the_smallest_volume_that_fits_wins() -> None:
    volumes = [pv("big", "10Gi"), pv("small", "2Gi"), pv("tiny", "500Mi")]
    assert find_matching_volume(pvc("1Gi"), volumes)["metadata"]["name"] == "small"
    assert find_matching_volume(pvc("20Gi"), volumes) is None


def test_class_access_modes_selector_and_claimed_volumes_are_respected() -> None:
    volumes = [pv("other-class", "1Gi", storage_class="fast"), pv("rwo", "1Gi"),
               pv("claimed", "1Gi", "ReadWriteMany", claimRef={"namespace": "x", "name": "y", "uid": "z"}),
               pv("labelled", "5Gi", "ReadWriteMany", metadata={"labels": {"tier": "gold"}})]
    assert find_matching_volume(pvc("1Gi", "ReadWriteMany"), volumes)["metadata"]["name"] == "labelled"
    assert find_matching_volume(pvc("1Gi", storage_class="fast"), volumes)["metadata"]["name"] == "other-class"
    selected = pvc("1Gi", selector={"matchLabels": {"tier": "silver"}})
    assert find_matching_volume(selected, volumes) is None


def test_a_volume_bound_to_the_claim_wins_unless_the_node_is_excluded() -> None:
    mine = pv("mine", "1Gi", claimRef={"namespace": "ns", "name": "c", "uid": "u1"}, nodeAffinity=on_node("n1"))
    claim = pvc("1Gi")
    assert is_bound_to(mine, claim)
    assert find_matching_volume(claim, [pv("free", "1Gi"), mine])["metadata"]["name"] == "mine"
    assert find_matching_volume(claim, [mine], node("n2")) is None


def test_delayed_binding_matches_only_with_a_node_whose_affinity_fits() -> None:
    local = pv("local", "1Gi", nodeAffinity=on_node("n1"))
    assert find_matching_volume(pvc("1Gi"), [local], delay_binding=True) is None
    assert find_matching_volume(pvc("1Gi"), [local], node("n2"), delay_binding=True) is None
    assert find_matching_volume(pvc("1Gi"), [local], node("n1"), delay_binding=True) is local
    assert node_affinity_matches(pv("anywhere", "1Gi"), {}, "n9")


def test_pod_claim_names_include_ephemeral_volumes() -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"volumes": [
        {"name": "a", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "tmp", "emptyDir": {}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}}
    assert pod_claim_names(pod) == ["data", "web-scratch"]
