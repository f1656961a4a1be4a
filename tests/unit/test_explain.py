"""`kubelab explain pod`: the table from the scheduler's record, the blockers per node and the nearest node,
and the CLI plumbing (lease → debug endpoint → record, then the cluster) over httpx mock transports."""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx
import pytest

from kubelab.commands import explain as cmd
from kubelab.commands.explain import Change, blockers, nearest_node, render
from support.builders import make_node, make_pod

SCHEDULED: dict[str, Any] = {
    "pod": "default/web", "attempt": 1, "time": "2024-05-01T10:00:00Z", "result": "Scheduled", "node": "node02",
    "message": "", "nodes": {
        "node01": {"filters": [{"plugin": "NodeUnschedulable", "code": "Success", "reasons": []},
                               {"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable",
                                "reasons": ["node(s) had untolerated taint {check: mycheck}"]}],
                   "scores": [], "total": 0},
        "node02": {"filters": [{"plugin": "TaintToleration", "code": "Success", "reasons": []}],
                   "scores": [{"plugin": "TaintToleration", "raw": 0, "normalized": 100, "weight": 3},
                              {"plugin": "NodeResourcesFit", "raw": 60, "normalized": 60, "weight": 1}],
                   "total": 360},
        "node03": {"filters": [{"plugin": "TaintToleration", "code": "Success", "reasons": []}],
                   "scores": [{"plugin": "TaintToleration", "raw": 1, "normalized": 0, "weight": 3},
                              {"plugin": "NodeResourcesFit", "raw": 90, "normalized": 90, "weight": 1}],
                   "total": 90},
    }}


def test_render_table_marks_the_chosen_node_and_weights_scores() -> None:
    lines = render(SCHEDULED).splitlines()
    assert lines[0] == "Pod default/web: Scheduled on node02 (attempt 1, 2024-05-01T10:00:00Z)"
    table = [line.split() for line in lines[2:]]
    assert table[0] == ["NODE", "VERDICT", "TaintToleration×3", "NodeResourcesFit×1", "TOTAL"]
    assert table[1] == ["*", "node02", "feasible", "300", "60", "360"]
    assert table[2] == ["node03", "feasible", "0", "90", "90"]
    assert lines[5].split()[0] == "node01"  # infeasible nodes last, no scores and no total
    assert "   TaintToleration: node(s) had untolerated taint {check: mycheck}   " in lines[5]
    assert lines[5].split()[-3:] == ["-", "-", "-"]


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, unschedulable: bool = False) -> dict[str, Any]:
    n = make_node(name, labels, cpu=cpu, memory=memory)
    n["spec"] = {"taints": taints or [], "unschedulable": unschedulable}
    return n


def pod(cpu: str = "1", memory: str = "1Gi", **spec: Any) -> dict[str, Any]:
    p = make_pod("web").namespace("default").requests(cpu=cpu, memory=memory).build()
    p["spec"].update(spec)
    return p


def placed(node_name: str, cpu: str, memory: str = "0") -> dict[str, Any]:
    return make_pod(f"on-{node_name}-{cpu}").namespace("default").node(node_name).requests(
        cpu=cpu, memory=memory).build()


CHECK = {"key": "check", "value": "mycheck", "effect": "NoExecute"}


@pytest.mark.parametrize("the_pod,the_node,kinds", [
    (pod(), node("n"), []),
    (pod(), node("n", taints=[CHECK]), ["toleration"]),
    (pod(tolerations=[{"operator": "Exists"}]), node("n", taints=[CHECK]), []),
    (pod(), node("n", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]), []),
    (pod(), node("n", unschedulable=True), ["uncordon"]),
    (pod(cpu="8"), node("n"), ["cpu"]),
    (pod(cpu="8", memory="16Gi"), node("n"), ["cpu", "memory"]),
    (pod(nodeSelector={"feng": "a"}), node("n", labels={"feng": "b"}), ["label"]),
    (pod(nodeName="other"), node("n"), ["other"]),
    (pod(cpu="8", nodeSelector={"disk": "ssd"}), node("n", taints=[CHECK]), ["toleration", "label", "cpu"]),
])
def test_blockers_kinds(the_pod: dict[str, Any], the_node: dict[str, Any], kinds: list[str]) -> None:
    assert [c.kind for c in blockers(the_pod, the_node, [])] == kinds


def test_toleration_snippet_is_yaml_for_the_taint() -> None:
    [change] = blockers(pod(), node("node01", taints=[CHECK]), [])
    assert change.summary == "node01 has taint check=mycheck:NoExecute the pod does not tolerate"
    assert change.snippet == ('tolerations:\n- key: "check"\n  operator: "Equal"\n  value: "mycheck"\n'
                              '  effect: "NoExecute"')
    [change] = blockers(pod(), node("node01", taints=[{"key": "gpu", "effect": "NoSchedule"}]), [])
    assert 'operator: "Exists"' in change.snippet and "value" not in change.snippet


def test_cpu_shortfall_counts_pods_already_on_the_node() -> None:
    [change] = blockers(pod(cpu="1500m"), node("node01", cpu="2"), [placed("node01", "1")])
    assert change.kind == "cpu"
    assert change.summary == "lacks 500m cpu: the pod requests 1500m, node01 has 1 free of 2"
    assert change.shortfall == 0.25


@pytest.mark.parametrize("expression,labels,command", [
    ({"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}, {}, "kubectl label node n disk=ssd --overwrite"),
    ({"key": "disk", "operator": "Exists"}, {}, "kubectl label node n disk=true --overwrite"),
    ({"key": "disk", "operator": "NotIn", "values": ["hdd"]}, {"disk": "hdd"}, "kubectl label node n disk-"),
    ({"key": "disk", "operator": "DoesNotExist"}, {"disk": "hdd"}, "kubectl label node n disk-"),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "4"}, "kubectl label node n cores=9 --overwrite"),
    ({"key": "cores", "operator": "Lt", "values": ["8"]}, {"cores": "16"},
     "kubectl label node n cores=7 --overwrite"),
])
def test_label_needed_for_each_operator(expression: dict[str, Any], labels: dict[str, str], command: str) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}
    [change] = blockers(pod(affinity=affinity), node("n", labels=labels), [])
    assert (change.kind, change.snippet) == ("label", command)


def test_cheapest_affinity_term_is_proposed() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "c", "operator": "In", "values": ["1"]}]}]}}}
    assert [c.snippet for c in blockers(pod(affinity=affinity), node("n"), [])] == \
        ["kubectl label node n c=1 --overwrite"]


def test_scheduler_only_reasons_come_from_the_record() -> None:
    recorded = {"filters": [{"plugin": "InterPodAffinity", "code": "Unschedulable",
                             "reasons": ["node(s) didn't match pod anti-affinity rules"]}]}
    assert blockers(pod(), node("n"), [], recorded) == [Change("other", "node(s) didn't match pod anti-affinity rules")]


def test_nearest_node_fewest_blockers_then_smallest_shortfall() -> None:
    nodes = [node("node01", taints=[CHECK], cpu="1"),  # two blockers
             node("node02", cpu="2"),  # lacks 1 of 2 cpu after its pod
             node("node03", cpu="4")]  # lacks 1 of 4 cpu after its pods: the smallest share
    pods = [placed("node02", "1"), placed("node03", "3"), placed("node03", "100m") | {"status": {"phase": "Failed"}}]
    name, changes = nearest_node(pod(cpu="2"), nodes, pods) or ("", [])
    assert name == "node03"
    assert [c.summary for c in changes] == ["lacks 1 cpu: the pod requests 2, node03 has 1 free of 4"]
    assert nearest_node(pod(), [], []) is None


def unschedulable_record() -> dict[str, Any]:
    return {"pod": "default/web", "attempt": 2, "time": "2024-05-01T10:00:00Z", "result": "Unschedulable",
            "node": None, "message": "0/1 nodes are available: 1 node(s) had untolerated taint {check: mycheck}.",
            "nodes": {"node01": {"filters": [{"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable",
                                              "reasons": ["node(s) had untolerated taint {check: mycheck}"]}],
                                 "scores": [], "total": 0}}}


def apiserver(lease_annotations: dict[str, str] | None) -> httpx.MockTransport:
    objects = {
        "/api/v1/namespaces/default/pods/web": pod(),
        "/api/v1/nodes": {"items": [node("node01", taints=[CHECK])]},
        "/api/v1/pods": {"items": [pod()]},
    }
    if lease_annotations is not None:
        objects[cmd.LEASE_PATH] = {"metadata": {"name": "kube-scheduler", "annotations": lease_annotations}}

    def handle(request: httpx.Request) -> httpx.Response:
        found = objects.get(request.url.path)
        return httpx.Response(200, json=found) if found is not None else httpx.Response(404, json={})
    return httpx.MockTransport(handle)


def scheduler_at(record: dict[str, Any] | None, seen: list[str]) -> Any:
    """A scheduler serving ``record`` for default/web (None: it has no record)."""
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if record is not None and request.url.path == "/debug/explain/default/web":
            return httpx.Response(200, json=record)
        return httpx.Response(404, text="no record")
    return lambda url: httpx.Client(base_url=url, transport=httpx.MockTransport(handle))


def test_explain_follows_the_lease_and_adds_the_nearest_node() -> None:
    seen: list[str] = []
    with httpx.Client(base_url="http://api", transport=apiserver({cmd.ENDPOINT_ANNOTATION: "http://sched:10259/"})) \
            as api:
        record, text = cmd.explain(api, "default", "web", None, scheduler_at(unschedulable_record(), seen))
    assert seen == ["http://sched:10259/debug/explain/default/web"]
    assert record["result"] == "Unschedulable"
    assert "0/1 nodes are available" in text
    assert "Nearest node: node01 (1 change away)" in text
    assert '      - key: "check"' in text


def test_explain_errors_are_plain() -> None:
    with (httpx.Client(base_url="http://api", transport=apiserver(None)) as api,
          pytest.raises(cmd.ExplainError, match="is a scheduler running")):
        cmd.explain(api, "default", "web", None, scheduler_at({}, []))
    with httpx.Client(base_url="http://api", transport=apiserver({})) as api:
        with pytest.raises(cmd.ExplainError, match="--scheduler URL"):
            cmd.explain(api, "default", "web", None, scheduler_at({}, []))
        with pytest.raises(cmd.ExplainError, match="not found"):
            cmd.explain(api, "default", "other", "http://sched", scheduler_at({}, []))
    with (httpx.Client(base_url="http://api", transport=apiserver({})) as api,
          pytest.raises(cmd.ExplainError, match="scheduling record")):
        cmd.explain(api, "default", "web", "http://sched", scheduler_at(None, []))


def test_run_prints_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    record = dict(SCHEDULED)
    monkeypatch.setattr(cmd, "explain", lambda api, ns, name, url, open_client: (record, render(record)))
    args = argparse.Namespace(master="http://127.0.0.1:1", kubeconfig=None, scheduler=None, namespace="default",
                              name="web", output="json", request_timeout=1.0)
    assert cmd.run(args) == 0
    assert json.loads(capsys.readouterr().out)["node"] == "node02"
    args.output = "table"
    assert cmd.run(args) == 0
    assert "Scheduled on node02" in capsys.readouterr().out
