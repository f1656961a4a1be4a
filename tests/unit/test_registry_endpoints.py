"""Endpoints and EndpointSlices: defaults, ValidateEndpoints / ValidateEndpointSlice, the tables kubectl prints,
and the bootstrap objects of ``default/kubernetes``."""

from __future__ import annotations

from typing import Any

from apiserver.app import Config, kubernetes_service_objects
from apiserver.registry.endpoints import EndpointsStrategy
from apiserver.registry.endpointslices import EndpointSliceStrategy

EP = EndpointsStrategy()
EPS = EndpointSliceStrategy()


def messages(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def endpoints(*subsets: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default"}, "subsets": list(subsets)}


def test_endpoints_ports_default_to_tcp_and_valid_ones_pass() -> None:
    obj = endpoints({"addresses": [{"ip": "127.0.0.1", "nodeName": "node01"}], "notReadyAddresses": [{"ip": "fd00::1"}],
                     "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]})
    EP.prepare_for_create(obj)
    assert [p["protocol"] for p in obj["subsets"][0]["ports"]] == ["TCP", "UDP"]
    assert EP.validate(obj) == []  # loopback is accepted in kubelab: pods share their node's address


def test_endpoints_validation_follows_validate_endpoints() -> None:
    obj = endpoints({"addresses": [{"ip": "1.2.3"}, {"ip": "0.0.0.0", "hostname": "Bad_Host"},
                                   {"ip": "169.254.1.1", "nodeName": "Node_1"}],
                     "ports": [{"port": 0, "protocol": "HTTP"}, {"name": "a", "port": 1, "protocol": "TCP",
                                                                  "appProtocol": "bad proto"}]},
                    {"ports": [{"port": 80, "protocol": "TCP"}]})
    got = messages(EP.validate(obj))
    assert got[:2] == ['subsets[0].addresses[0].ip: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 '
                       'or 2001:db8::ffff)', 'subsets[0].addresses[0].ip: Invalid value: "1.2.3": must be a valid IP '
                                             'address']
    assert got[2].startswith('subsets[0].addresses[1].hostname: Invalid value: "Bad_Host": a lowercase RFC 1123 label')
    assert got[3] == 'subsets[0].addresses[1].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)'
    assert got[4].startswith('subsets[0].addresses[2].nodeName: Invalid value: "Node_1": a lowercase RFC 1123 '
                             'subdomain')
    assert got[5:9] == [
        'subsets[0].addresses[2].ip: Invalid value: "169.254.1.1": may not be in the link-local range '
        '(169.254.0.0/16, fe80::/10)',
        "subsets[0].ports[0].name: Required value",
        "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'subsets[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']
    assert got[9].startswith('subsets[0].ports[1].appProtocol: Invalid value: "bad proto": name part must consist')
    assert got[10:] == ["subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`"]


def test_endpoints_table_as_kubectl_prints_it() -> None:
    assert EP.row(endpoints())[1] == "<none>"
    many = endpoints({"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)], "ports": [{"port": 80}]},
                     {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 443}, {"port": 8443}]})
    assert EP.row(many)[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."
    assert EP.row(endpoints({"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 443}]}))[1] == "[fd00::1]:443"
    assert EP.row(endpoints({"addresses": [{"ip": "10.0.0.1"}]}))[1] == "10.0.0.1"  # headless without ports
    assert EP.row(endpoints({"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}))[1] == ""
    assert [c.name for c in EP.columns()] == ["Name", "Endpoints", "Age"]


def endpoint_slice(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web-abcde", "namespace": "default"}, "addressType": "IPv4", **fields}


def test_endpoint_slice_defaults_and_validation() -> None:
    obj = endpoint_slice(endpoints=[{"addresses": ["10.0.0.1"], "deprecatedTopology": {"a": "b"}}],
                         ports=[{"port": 80}])
    EPS.prepare_for_create(obj)
    assert obj["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}] and "deprecatedTopology" not in \
        obj["endpoints"][0]
    assert EPS.validate(obj) == []
    bad = endpoint_slice(addressType="IPv6", endpoints=[
        {"addresses": ["10.0.0.1"], "nodeName": "N", "hostname": "x_y",
         "hints": {"forZones": [{"name": "z"}, {"name": "z"}]}}, {"addresses": []}],
        ports=[{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "ICMP"}])
    got = messages(EPS.validate(bad))
    assert got[0] == 'endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address'
    assert got[1].startswith('endpoints[0].nodeName: Invalid value: "N": a lowercase RFC 1123 subdomain')
    assert got[2].startswith('endpoints[0].hostname: Invalid value: "x_y": a lowercase RFC 1123 label')
    assert got[3:] == ['endpoints[0].hints.forZones[1].name: Duplicate value: "z"',
                       "endpoints[1].addresses: Required value: must contain at least 1 address",
                       'ports[1].name: Duplicate value: "a"',
                       'ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']
    assert [c.type for c in EPS.validate(endpoint_slice(addressType=""))] == ["FieldValueRequired"]
    changed = EPS.validate_update(endpoint_slice(addressType="IPv6"), endpoint_slice())
    assert messages(changed) == ['addressType: Invalid value: "IPv6": field is immutable']


def test_endpoint_slice_generation_moves_with_any_change_but_metadata() -> None:
    old = endpoint_slice(endpoints=[{"addresses": ["10.0.0.1"]}])
    assert not EPS.spec_changed({**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}, old)
    assert EPS.spec_changed({**old, "endpoints": []}, old)


def test_endpoint_slice_table_as_kubectl_prints_it() -> None:
    assert EPS.row(endpoint_slice())[1:4] == ["IPv4", "<unset>", "<unset>"]
    obj = endpoint_slice(ports=[{"port": 80}, {"name": "all"}, {}, {"port": 9}],
                         endpoints=[{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]},
                                    {"addresses": ["10.0.0.4"]}])
    assert EPS.row(obj)[1:4] == ["IPv4", "80,all,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."]
    assert [c.name for c in EPS.columns()] == ["Name", "AddressType", "Ports", "Endpoints", "Age"]


def test_kubernetes_endpoints_follow_the_advertised_address() -> None:
    service, ep, eps = kubernetes_service_objects(Config(advertise_address="0.0.0.0:6443", port=6443))
    assert (service.resource, service.points_at) == ("services", None)
    assert ep.points_at is not None and ep.points_at(ep.obj) == "127.0.0.1:6443"
    assert eps.points_at is not None and eps.points_at(eps.obj) == "127.0.0.1:6443"
    assert ep.obj["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}], "ports": [
        {"name": "https", "port": 6443, "protocol": "TCP"}]}]
    assert ep.obj["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert (eps.group, eps.obj["metadata"]["labels"]) == ("discovery.k8s.io", {"kubernetes.io/service-name":
                                                                               "kubernetes"})
    assert EPS.validate(eps.obj) == [] and EP.validate(ep.obj) == []
    _, ep6, eps6 = kubernetes_service_objects(Config(advertise_address="[fd00::5]:8080", port=8080))
    assert ep6.obj["subsets"][0]["addresses"] == [{"ip": "fd00::5"}] and eps6.obj["addressType"] == "IPv6"
    moved = ep.reconciled({"metadata": {"name": "kubernetes", "labels": {"x": "y"}, "resourceVersion": "5"},
                           "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 1}]}]})
    assert moved["subsets"] == ep.obj["subsets"] and moved["metadata"]["resourceVersion"] == "5"
    assert moved["metadata"]["labels"] == {"x": "y", "endpointslice.kubernetes.io/skip-mirror": "true"}
