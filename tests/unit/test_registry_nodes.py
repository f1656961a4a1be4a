"""The node strategy: taints, capacity, status handling and ``kubectl get nodes``."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimachinery.errors import BadRequest, Cause
from apiserver.registry.nodes import NodeStrategy

STRATEGY = NodeStrategy()


def make_node(name: str = "node-1", **spec: Any) -> dict[str, Any]:
    created = (datetime.now(UTC) - timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "creationTimestamp": created},
            "spec": spec,
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.0.10"},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                    "kernelVersion": "6.1.0", "containerRuntimeVersion": "kubelab://0.1.0"}}}


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_identity() -> None:
    assert (STRATEGY.namespaced, STRATEGY.short_names, STRATEGY.subresources, STRATEGY.bumps_generation) == (
        False, ("no",), ("status", "proxy"), False)


def test_allocatable_defaults_to_capacity() -> None:
    node = make_node()
    STRATEGY.prepare_for_create(node)
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert STRATEGY.validate(node) == []


def test_unparsable_capacity_is_a_decode_error() -> None:
    node = make_node()
    node["status"]["capacity"]["cpu"] = "four"
    with pytest.raises(BadRequest, match='^Node in version "v1" cannot be handled as a Node: quantities must match'):
        STRATEGY.prepare_for_create(node)


def test_taint_rules() -> None:
    node = make_node(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                             {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
                             {"key": "bad key", "effect": "NoSchedule"},
                             {"key": "x", "effect": "Never"},
                             {"key": "y"}])
    causes = errors(STRATEGY.validate(node))
    assert causes[0] == ('metadata.taints[1]: Duplicate value: core.Taint{Key:"dedicated", Value:"other", '
                         'Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: '
                         'taints must be unique by key and effect pair')
    assert causes[1].startswith('metadata.taints[2].key: Invalid value: "bad key": name part must consist of')
    assert causes[2:] == [
        'metadata.taints[3].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"',
        "metadata.taints[4].effect: Required value",
    ]


def test_same_key_with_different_effects_is_fine() -> None:
    node = make_node(taints=[{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"}])
    assert STRATEGY.validate(node) == []


def test_negative_capacity_is_invalid() -> None:
    node = make_node()
    node["status"]["capacity"]["cpu"] = "-1"
    assert errors(STRATEGY.validate(node)) == [
        'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0']


def test_spec_update_keeps_status_and_status_update_keeps_spec() -> None:
    old = make_node()
    STRATEGY.prepare_for_create(old)
    cordoned = copy.deepcopy(old)
    cordoned["spec"]["unschedulable"] = True
    cordoned["status"]["conditions"] = []
    STRATEGY.prepare_for_update(cordoned, old)
    assert cordoned["status"] == old["status"] and cordoned["spec"]["unschedulable"] is True
    heartbeat = copy.deepcopy(old)
    heartbeat["spec"]["unschedulable"] = True
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    STRATEGY.prepare_for_status_update(heartbeat, old)
    assert heartbeat["spec"] == old["spec"] and heartbeat["status"]["conditions"][0]["status"] == "False"


def test_pod_cidrs_may_only_be_set_once() -> None:
    old = make_node(podCIDRs=["10.244.1.0/24"])
    new = copy.deepcopy(old)
    new["spec"]["podCIDRs"] = ["10.244.2.0/24"]
    assert errors(STRATEGY.validate_update(new, old)) == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid']


def test_selectable_fields() -> None:
    assert STRATEGY.selectable_fields(make_node(unschedulable=True)) == {"metadata.name": "node-1",
                                                                        "spec.unschedulable": "true"}


def test_columns() -> None:
    assert [(c.name, c.priority) for c in STRATEGY.columns()] == [
        ("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0), ("Internal-IP", 1),
        ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1), ("Container-Runtime", 1)]


def test_ready_worker_row() -> None:
    assert STRATEGY.row(make_node()) == ["node-1", "Ready", "<none>", "10d", "v1.32.0", "192.168.0.10", "<none>",
                                         "Debian GNU/Linux 12 (bookworm)", "6.1.0", "kubelab://0.1.0"]


@pytest.mark.parametrize(("conditions", "unschedulable", "status"), [
    ([{"type": "Ready", "status": "False"}], False, "NotReady"),
    ([{"type": "Ready", "status": "Unknown"}], False, "NotReady"),
    ([], False, "Unknown"),
    ([{"type": "Ready", "status": "True"}], True, "Ready,SchedulingDisabled"),
])
def test_status_cell(conditions: list[dict[str, str]], unschedulable: bool, status: str) -> None:
    node = make_node(unschedulable=unschedulable)
    node["status"]["conditions"] = conditions
    assert STRATEGY.row(node)[1] == status


def test_roles_cell() -> None:
    node = make_node()
    node["metadata"]["labels"] = {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "",
                                  "kubernetes.io/role": "master", "node-role.kubernetes.io/": "x"}
    assert STRATEGY.row(node)[2] == "control-plane,etcd,master"


def test_missing_node_info_cells() -> None:
    node = make_node()
    node["status"] = {}
    assert STRATEGY.row(node)[4:] == ["", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]
