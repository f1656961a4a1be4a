"""Table-driven tests of the node-level filter and score plugins, and the seed tutorial's examples.

The seed (a Chinese Kubernetes tutorial) lists the predicates PodFitsResources, PodFitsHost, PodFitsHostPorts,
PodSelectorMatches and NoDiskConflict (see test_scheduler_plugin_volumerestrictions.py), the priorities
LeastRequestedPriority, BalancedResourceAllocation and ImageLocalityPriority (test_scheduler_plugin_imagelocality),
nodeName, nodeSelector ``feng=a``, node affinity with In/NotIn/Gt/Lt/Exists/DoesNotExist, taints and tolerations
and cordon; each example has a case here.
"""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery.taints import tolerates
from scheduler.framework import Code, CycleState, NodeInfo, default_normalize_score, unschedulable
from scheduler.plugins import DEFAULT_FILTERS, DEFAULT_SCORES, REGISTRY
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.scheduler import failure_message


def node(name: str = "n1", labels: dict[str, str] | None = None, cpu: str = "4", memory: str = "8Gi",
         taints: list[dict[str, str]] | None = None, unschedulable: bool = False) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": labels or {}},
                     "spec": {"taints": taints or [], "unschedulable": unschedulable},
                     "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}})


def pod(cpu: str | None = None, memory: str | None = None, **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"metadata": {"name": "p", "namespace": "d"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}}


def scored(plugin: Any, p: dict[str, Any], nodes: list[NodeInfo]) -> dict[str, int]:
    """Raw scores, then the plugin's own normalisation if it has one (as the runner does)."""
    state = CycleState(nodes)
    raw = {n.name: plugin.score(state, p, n) for n in nodes}
    return plugin.normalize(state, p, raw) if hasattr(plugin, "normalize") else raw


# --- TaintToleration ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("toleration,taint,expected", [
    ({"key": "check", "operator": "Equal", "value": "mycheck", "effect": "NoExecute"},
     {"key": "check", "value": "mycheck", "effect": "NoExecute"}, True),
    ({"key": "check", "operator": "Equal", "value": "other", "effect": "NoExecute"},
     {"key": "check", "value": "mycheck", "effect": "NoExecute"}, False),
    # seed: no effect given tolerates every effect of that key
    ({"key": "check", "operator": "Exists"}, {"key": "check", "value": "x", "effect": "NoSchedule"}, True),
    # seed: no key with Exists tolerates every taint
    ({"operator": "Exists"}, {"key": "anything", "value": "x", "effect": "NoExecute"}, True),
    ({"key": "check", "operator": "Exists", "effect": "NoSchedule"},
     {"key": "check", "effect": "NoExecute"}, False),
    ({"key": "", "operator": "Equal"}, {"key": "a", "effect": "NoSchedule"}, False),
])
def test_toleration_matching(toleration: dict[str, str], taint: dict[str, str], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize("taint,tolerations,reason", [
    # seed: kubectl taint nodes node01 check=mycheck:NoExecute
    ({"key": "check", "value": "mycheck", "effect": "NoExecute"}, [],
     "node(s) had untolerated taint {check: mycheck}"),
    ({"key": "dedicated", "effect": "NoSchedule"}, [], "node(s) had untolerated taint {dedicated: }"),
    ({"key": "check", "value": "mycheck", "effect": "NoExecute"}, [{"operator": "Exists"}], None),
    ({"key": "check", "value": "mycheck", "effect": "NoExecute"},
     [{"key": "check", "operator": "Equal", "value": "mycheck", "effect": "NoExecute"}], None),
    # PreferNoSchedule never filters (seed: the master stays usable when other nodes run out)
    ({"key": "node-role.kubernetes.io/master", "effect": "PreferNoSchedule"}, [], None),
])
def test_taint_filter(taint: dict[str, str], tolerations: list[dict[str, str]], reason: str | None) -> None:
    status = TaintToleration().filter(CycleState(), pod(tolerations=tolerations), node(taints=[taint]))
    assert status.reasons == ((reason,) if reason else ())
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if reason else Code.SUCCESS)


def test_prefer_no_schedule_score_is_reverse_normalised() -> None:
    """Seed: master=:PreferNoSchedule — pods avoid the master while other nodes are available."""
    master = node("master", taints=[{"key": "node-role.kubernetes.io/master", "effect": "PreferNoSchedule"},
                                    {"key": "b", "effect": "PreferNoSchedule"}])
    half = node("half", taints=[{"key": "b", "effect": "PreferNoSchedule"}])
    worker = node("worker", taints=[{"key": "x", "effect": "NoSchedule"}])  # not counted by the score
    plugin = TaintToleration()
    assert [plugin.score(CycleState(), pod(), n) for n in (master, half, worker)] == [2, 1, 0]
    assert scored(plugin, pod(), [master, half, worker]) == {"master": 0, "half": 50, "worker": 100}
    # only tolerations with an empty or PreferNoSchedule effect count for the score
    tolerant = pod(tolerations=[{"key": "b", "operator": "Exists", "effect": "PreferNoSchedule"},
                                {"key": "node-role.kubernetes.io/master", "operator": "Exists",
                                 "effect": "NoSchedule"}])
    assert scored(plugin, tolerant, [master, half, worker]) == {"master": 0, "half": 100, "worker": 100}
    assert scored(plugin, pod(), [worker]) == {"worker": 100}


# --- NodeAffinity ------------------------------------------------------------------------------------------

def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.parametrize("operator,values,labels,expected", [
    ("In", ["a", "b"], {"feng": "a"}, True),
    ("In", ["b"], {"feng": "a"}, False),
    ("In", ["a"], {}, False),
    ("NotIn", ["b"], {"feng": "a"}, True),
    ("NotIn", ["a"], {"feng": "a"}, False),
    ("NotIn", ["a"], {}, True),
    ("Exists", None, {"feng": "a"}, True),
    ("Exists", None, {}, False),
    ("DoesNotExist", None, {"feng": "a"}, False),
    ("DoesNotExist", None, {}, True),
    ("Gt", ["5"], {"feng": "7"}, True),
    ("Gt", ["7"], {"feng": "7"}, False),
    ("Gt", ["5"], {"feng": "x"}, False),  # not an integer: no match
    ("Gt", ["5"], {}, False),
    ("Lt", ["5"], {"feng": "7"}, False),
    ("Lt", ["8"], {"feng": "7"}, True),
    ("Lt", ["8"], {}, False),
    ("Gt", ["5", "6"], {"feng": "7"}, False),  # Gt/Lt take exactly one value
])
def test_required_node_affinity_operators(operator: str, values: list[str] | None, labels: dict[str, str],
                                          expected: bool) -> None:
    expression: dict[str, Any] = {"key": "feng", "operator": operator}
    if values is not None:
        expression["values"] = values
    status = NodeAffinity().filter(CycleState(), pod(affinity=required({"matchExpressions": [expression]})),
                                   node(labels=labels))
    assert status.ok is expected
    if not expected:
        assert status.reasons == ("node(s) didn't match Pod's node affinity/selector",)
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize("field,node_name,expected", [
    ({"key": "metadata.name", "operator": "In", "values": ["node01"]}, "node01", True),
    ({"key": "metadata.name", "operator": "In", "values": ["node01"]}, "node02", False),
    ({"key": "metadata.name", "operator": "NotIn", "values": ["node01"]}, "node02", True),
    ({"key": "metadata.name", "operator": "NotIn", "values": ["node01"]}, "node01", False),
    ({"key": "metadata.name", "operator": "In", "values": ["node01", "node02"]}, "node01", False),  # one value
    ({"key": "metadata.name", "operator": "Exists"}, "node01", False),  # field selectors: In/NotIn only
    ({"key": "metadata.uid", "operator": "In", "values": ["node01"]}, "node01", False),
])
def test_match_fields(field: dict[str, Any], node_name: str, expected: bool) -> None:
    assert NodeAffinity().filter(CycleState(), pod(affinity=required({"matchFields": [field]})),
                                 node(node_name)).ok is expected


def test_terms_are_ored_and_expressions_anded() -> None:
    ssd = {"key": "disk", "operator": "In", "values": ["ssd"]}
    big = {"key": "size", "operator": "Gt", "values": ["10"]}
    both = pod(affinity=required({"matchExpressions": [ssd, big]}))
    either = pod(affinity=required({"matchExpressions": [ssd]}, {"matchExpressions": [big]}))
    plugin, state = NodeAffinity(), CycleState()
    assert not plugin.filter(state, both, node(labels={"disk": "ssd", "size": "5"})).ok
    assert plugin.filter(state, both, node(labels={"disk": "ssd", "size": "50"})).ok
    assert plugin.filter(state, either, node(labels={"size": "50"})).ok
    assert not plugin.filter(state, pod(affinity=required({})), node()).ok  # an empty term matches nothing


def test_node_selector_seed_example() -> None:
    """Seed: kubectl label nodes node01 feng=a; node02 feng=b; a pod with nodeSelector feng=a → node01 only."""
    plugin, p = NodeAffinity(), pod(nodeSelector={"feng": "a"})
    assert plugin.filter(CycleState(), p, node("node01", {"feng": "a"})).ok
    assert not plugin.filter(CycleState(), p, node("node02", {"feng": "b"})).ok
    # nodeSelector and required affinity must both hold
    both = pod(nodeSelector={"feng": "a"},
               affinity=required({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}))
    assert not plugin.filter(CycleState(), both, node("node01", {"feng": "a"})).ok
    assert plugin.filter(CycleState(), both, node("node01", {"feng": "a", "zone": "z"})).ok


def test_preferred_terms_weights_normalised() -> None:
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
        {"weight": 5, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                      "values": ["n2"]}]}}]}}
    nodes = [node("n1", {"disk": "ssd"}), node("n2", {"disk": "ssd"}), node("n3")]
    plugin = NodeAffinity()
    assert [plugin.score(CycleState(), pod(affinity=preferred), n) for n in nodes] == [20, 25, 0]
    assert scored(plugin, pod(affinity=preferred), nodes) == {"n1": 80, "n2": 100, "n3": 0}
    assert scored(plugin, pod(), nodes) == {"n1": 0, "n2": 0, "n3": 0}


# --- NodeResourcesFit, BalancedAllocation ------------------------------------------------------------------

@pytest.mark.parametrize("requests,reasons", [
    ({"cpu": "2", "memory": "2Gi"}, ("Insufficient cpu", "Insufficient memory")),
    ({"cpu": "2"}, ("Insufficient cpu",)),
    ({"memory": "2Gi"}, ("Insufficient memory",)),
    ({"cpu": "500m", "memory": "512Mi"}, ()),
    ({"cpu": "1", "memory": "1Gi"}, ()),  # exactly what is free
])
def test_resources_fit(requests: dict[str, str], reasons: tuple[str, ...]) -> None:
    """Seed: PodFitsResources — what is left on the node must cover the pod's requests."""
    small = node(cpu="1", memory="1Gi")
    assert NodeResourcesFit().filter(CycleState(), pod(**requests), small).reasons == reasons


def test_resources_fit_counts_placed_pods_init_containers_and_pod_count() -> None:
    n = node(cpu="2", memory="4Gi")
    n.add_pod("d/a", pod(cpu="1500m"))
    assert NodeResourcesFit().filter(CycleState(), pod(cpu="600m"), n).reasons == ("Insufficient cpu",)
    init = pod(cpu="100m", initContainers=[{"name": "i", "resources": {"requests": {"memory": "5Gi"}}}])
    assert NodeResourcesFit().filter(CycleState(), init, n).reasons == ("Insufficient memory",)
    full = NodeInfo({"metadata": {"name": "f"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi",
                                                                           "pods": "1"}}})
    full.add_pod("d/a", pod())
    assert NodeResourcesFit().filter(CycleState(), pod(), full).reasons == ("Too many pods",)


def seed_nodes() -> tuple[NodeInfo, NodeInfo, dict[str, Any]]:
    """After placing the incoming pod, node01 is at cpu 20 % / memory 60 %, node02 at 50 % / 50 %."""
    node01 = node("node01", cpu="10", memory="10Gi")
    node01.add_pod("d/a", pod(cpu="1", memory="5Gi"))
    node02 = node("node02", cpu="10", memory="10Gi")
    node02.add_pod("d/b", pod(cpu="4", memory="4Gi"))
    return node01, node02, pod(cpu="1", memory="1Gi")


def test_balanced_allocation_seed_example() -> None:
    """Seed: BalancedResourceAllocation prefers node02 (50:50) over node01 (20:60)."""
    node01, node02, incoming = seed_nodes()
    assert scored(NodeResourcesBalancedAllocation(), incoming, [node01, node02]) == {"node01": 80, "node02": 100}


def test_least_allocated_seed_example() -> None:
    """Seed: LeastRequestedPriority prefers lower usage — node01 (mean free 60 %) over node02 (50 %); with both
    priorities at weight 1, node02 still wins, as the seed says."""
    node01, node02, incoming = seed_nodes()
    least = scored(NodeResourcesFit(), incoming, [node01, node02])
    assert least == {"node01": 60, "node02": 50}
    balanced = scored(NodeResourcesBalancedAllocation(), incoming, [node01, node02])
    assert least["node02"] + balanced["node02"] > least["node01"] + balanced["node01"]


def test_scores_count_default_requests_for_containers_without_requests() -> None:
    """A best-effort pod counts as 0.1 cpu / 200 MiB, so empty nodes still beat busy ones."""
    busy, idle = node("busy", cpu="1", memory="1Gi"), node("idle", cpu="1", memory="1Gi")
    for i in range(4):
        busy.add_pod(f"d/{i}", pod())
    # busy: cpu 500m/1 → 50, memory 1000Mi/1Gi → 2; idle: 100m → 90, 200Mi → 80
    assert scored(NodeResourcesFit(), pod(), [busy, idle]) == {"busy": 26, "idle": 85}


# --- NodeName, NodePorts, NodeUnschedulable ----------------------------------------------------------------

def test_node_name_seed_example() -> None:
    """Seed: PodFitsHost — spec.nodeName names the only node the pod fits."""
    plugin = NodeName()
    assert plugin.filter(CycleState(), pod(nodeName="node01"), node("node01")).ok
    status = plugin.filter(CycleState(), pod(nodeName="node01"), node("node02"))
    assert status.reasons == ("node(s) didn't match the requested node name",)
    assert plugin.filter(CycleState(), pod(), node("node02")).ok


@pytest.mark.parametrize("used,wanted,conflict", [
    ({"hostPort": 8080}, {"hostPort": 8080}, True),
    ({"hostPort": 8080}, {"hostPort": 8081}, False),
    ({"hostPort": 8080, "protocol": "UDP"}, {"hostPort": 8080}, False),
    ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080, "hostIP": "10.0.0.2"}, False),
    ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"hostPort": 8080}, True),  # 0.0.0.0 clashes with every IP
])
def test_host_ports_seed_example(used: dict[str, Any], wanted: dict[str, Any], conflict: bool) -> None:
    """Seed: PodFitsHostPorts — a hostPort already used on the node conflicts."""
    taken = node()
    occupant = pod()
    occupant["spec"]["containers"][0]["ports"] = [{"containerPort": 80, **used}]
    taken.add_pod("d/x", occupant)
    incoming = pod()
    incoming["spec"]["containers"][0]["ports"] = [{"containerPort": 80, **wanted}]
    assert NodePorts().filter(CycleState(), incoming, taken).ok is not conflict


def test_cordon_seed_example() -> None:
    """Seed: kubectl cordon marks the node SchedulingDisabled; no new pods unless they tolerate it."""
    status = NodeUnschedulable().filter(CycleState(), pod(), node(unschedulable=True))
    assert status.reasons == ("node(s) were unschedulable",)
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                 "effect": "NoSchedule"}])
    assert NodeUnschedulable().filter(CycleState(), tolerant, node(unschedulable=True)).ok


# --- framework and registry --------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,reverse,expected", [
    ({"a": 0, "b": 0}, False, {"a": 0, "b": 0}),
    ({"a": 0, "b": 0}, True, {"a": 100, "b": 100}),
    ({"a": 1, "b": 3}, False, {"a": 33, "b": 100}),
    ({"a": 1, "b": 3}, True, {"a": 67, "b": 0}),
])
def test_default_normalize_score(raw: dict[str, int], reverse: bool, expected: dict[str, int]) -> None:
    assert default_normalize_score(raw, reverse) == expected


def test_registry_has_kube_scheduler_default_profile() -> None:
    assert DEFAULT_SCORES == {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2,
                              "InterPodAffinity": 2, "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1,
                              "ImageLocality": 1}
    for name in (*DEFAULT_FILTERS, *DEFAULT_SCORES):
        plugin = REGISTRY[name]()
        assert plugin.name == name
        assert hasattr(plugin, "filter") if name in DEFAULT_FILTERS else hasattr(plugin, "score")


def test_failure_message_reads_like_kubernetes() -> None:
    statuses = {"node01": unschedulable("node(s) had untolerated taint {check: mycheck}"),
                "node02": unschedulable("Insufficient cpu"), "node03": unschedulable("Insufficient cpu")}
    assert failure_message(3, statuses) == \
        "0/3 nodes are available: 1 node(s) had untolerated taint {check: mycheck}, 2 Insufficient cpu."
