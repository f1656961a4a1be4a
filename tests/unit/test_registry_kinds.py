"""The strategies of the smaller built-in kinds: Ingresses, IngressClasses, NetworkPolicies, RuntimeClasses,
events.k8s.io/v1 conversion, ComponentStatuses' rows and API Priority and Fairness's objects and bootstrap."""

from __future__ import annotations

import asyncio
from typing import Any

from apimachinery.errors import Cause
from apiserver import flowcontrol
from apiserver.registry.componentstatuses import ComponentStatusStrategy, Probe, ProbeResult
from apiserver.registry.eventsv1 import EventV1Strategy, to_core, to_events
from apiserver.registry.flowschemas import FlowSchemaStrategy
from apiserver.registry.ingressclasses import IngressClassStrategy
from apiserver.registry.ingresses import IngressStrategy, hosts_cell
from apiserver.registry.networkpolicies import NetworkPolicyStrategy
from apiserver.registry.prioritylevelconfigurations import PriorityLevelConfigurationStrategy
from apiserver.registry.runtimeclasses import RuntimeClassStrategy


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def backend(port: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"service": {"name": "svc", "port": port or {"number": 80}}}


def test_ingress_validation() -> None:
    strategy = IngressStrategy()
    assert errors(strategy.validate({"spec": {}})) == [
        'spec: Invalid value: "null": either `defaultBackend` or `rules` must be specified']
    rules = [{"host": "*.example.com", "http": {"paths": [
        {"path": "/a", "pathType": "Prefix", "backend": backend()},
        {"path": "b", "pathType": "Exact", "backend": backend({"number": 80, "name": "http"})},
        {"path": "/c", "backend": {**backend(), "resource": {"kind": "Bucket", "name": "b"}}}]}}]
    assert errors(strategy.validate({"spec": {"rules": rules}})) == [
        'spec.rules[0].http.paths[1].path: Invalid value: "b": must be an absolute path',
        'spec.rules[0].http.paths[1].backend.service.port: Invalid value: "": cannot set both port name & port '
        "number",
        "spec.rules[0].http.paths[2].pathType: Required value: pathType must be specified",
        'spec.rules[0].http.paths[2].backend: Invalid value: "": cannot set both resource and service backends']


def test_ingress_cells() -> None:
    assert hosts_cell([]) == "*"
    assert hosts_cell([{"host": "a"}, {}, {"host": "c"}, {"host": "d"}]) == "a,c + 1 more..."
    obj = {"metadata": {"name": "i"}, "spec": {"rules": [{"host": "a"}], "tls": [{}]},
           "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example.com"}]}}}
    assert IngressStrategy().row(obj)[:5] == ["i", "<none>", "a", "1.2.3.4,lb.example.com", "80, 443"]


def test_ingress_class_defaults_and_validation() -> None:
    strategy = IngressClassStrategy()
    obj: dict[str, Any] = {"spec": {"controller": "example.com/ingress", "parameters": {"kind": "K", "name": "n"}}}
    strategy.prepare_for_create(obj)
    assert obj["spec"]["parameters"]["scope"] == "Cluster"
    assert strategy.validate(obj) == []
    bad = {"spec": {"controller": "nope", "parameters": {"kind": "K", "name": "n", "scope": "Namespace"}}}
    assert errors(strategy.validate(bad)) == [
        'spec.controller: Invalid value: "nope": must be a domain-prefixed path (such as "acme.io/foo")',
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]
    assert errors(strategy.validate_update({"spec": {"controller": "a.io/x"}}, {"spec": {"controller": "b.io/x"}})) \
        == ['spec.controller: Invalid value: "a.io/x": field is immutable']


def test_network_policy_defaults_and_validation() -> None:
    strategy = NetworkPolicyStrategy()
    obj: dict[str, Any] = {"spec": {"egress": [{"ports": [{"port": 53}]}]}}
    strategy.prepare_for_create(obj)
    assert obj["spec"] == {"egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "podSelector": {},
                           "policyTypes": ["Ingress", "Egress"]}
    bad = {"spec": {"podSelector": {}, "policyTypes": ["Sideways"], "ingress": [{
        "ports": [{"port": "http", "endPort": 90}, {"port": 100, "endPort": 90, "protocol": "ICMP"}],
        "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}, "podSelector": {}},
                 {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]}}
    assert errors(strategy.validate(bad)) == [
        'spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric',
        'spec.ingress[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        "spec.ingress[0].ports[1].endPort: Invalid value: 90: must be greater than or equal to `port`",
        'spec.ingress[0].from[0]: Invalid value: "": may not specify both ipBlock and another peer',
        'spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`',
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"']


def test_runtime_class_validation() -> None:
    strategy = RuntimeClassStrategy()
    assert errors(strategy.validate({})) == ["handler: Required value"]
    assert errors(strategy.validate({"handler": "Run_SC"}))[0].startswith('handler: Invalid value: "Run_SC": a '
                                                                          "lowercase RFC 1123 label must consist")


def test_events_v1_round_trip() -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "message": "m", "count": 2,
            "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"},
            "reportingComponent": "kubelet", "firstTimestamp": "2026-01-01T00:00:00Z"}
    events = to_events(core)
    assert events == {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "note": "m",
                      "deprecatedCount": 2, "regarding": {"kind": "Pod", "name": "p"},
                      "deprecatedSource": {"component": "kubelet"}, "reportingController": "kubelet",
                      "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z"}
    assert to_core(events) == core
    assert "deprecatedSource" not in to_events({**core, "source": {}})
    strategy = EventV1Strategy()
    assert strategy.selectable_fields(events)["involvedObject.name"] == "p"


def test_component_status_rows() -> None:
    async def healthy() -> ProbeResult:
        return ProbeResult(True, "ok")

    async def down() -> ProbeResult:
        return ProbeResult(False, error="refused")

    strategy = ComponentStatusStrategy([Probe("scheduler", healthy), Probe("controller-manager", down)])
    items = asyncio.run(strategy.items())
    assert [strategy.row(obj) for obj in items] == [["controller-manager", "Unhealthy", "", "refused"],
                                                     ["scheduler", "Healthy", "ok", ""]]
    assert strategy.row({"metadata": {"name": "x"}}) == ["x", "Unknown", "", ""]


def test_flow_control_objects_validate_and_print() -> None:
    levels, schemas = PriorityLevelConfigurationStrategy(), FlowSchemaStrategy()
    for level in flowcontrol.PRIORITY_LEVELS:
        assert levels.validate(level) == [], level["metadata"]["name"]
    for schema in flowcontrol.FLOW_SCHEMAS:
        assert schemas.validate(schema) == [], schema["metadata"]["name"]
    obj: dict[str, Any] = {"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                                                                                    "queuing": {}}}}}
    levels.prepare_for_create(obj)
    assert obj["spec"]["limited"] == {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
        "type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}
    assert errors(levels.validate({"spec": {"type": "Limited", "limited": {"limitResponse": {
        "type": "Queue", "queuing": {"queues": 2, "handSize": 3, "queueLengthLimit": 1}}}}})) == [
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 3: should not be greater than queues (2)"]
    assert levels.row(flowcontrol.EXEMPT_LEVEL)[:6] == ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    dangling = {**flowcontrol.FLOW_SCHEMAS[0], "status": {"conditions": [
        flowcontrol.dangling_condition(flowcontrol.FLOW_SCHEMAS[0], set())]}}
    assert schemas.row(dangling)[:4] + schemas.row(dangling)[5:] == ["exempt", "exempt", 1, "<none>", "True"]


def test_auto_update_follows_the_annotation_then_the_generation() -> None:
    def meta(annotations: dict[str, str] | None, generation: int) -> dict[str, Any]:
        return {"metadata": {"annotations": annotations, "generation": generation}}

    assert flowcontrol.auto_updates(meta({"apf.kubernetes.io/autoupdate-spec": "true"}, 5))
    assert not flowcontrol.auto_updates(meta({"apf.kubernetes.io/autoupdate-spec": "false"}, 1))
    assert flowcontrol.auto_updates(meta(None, 1)) and not flowcontrol.auto_updates(meta(None, 2))
