"""Endpoints (core/v1): the addresses behind a Service, kept by the endpoint controller (or by hand for a Service
without selector).

What kube-apiserver does, and where:

* ``SetDefaults_EndpointPort``: a port's protocol defaults to TCP;
* ``ValidateEndpoints``: every subset has ``addresses`` or ``notReadyAddresses``; an address has a valid IP, a DNS
  label hostname and a DNS subdomain nodeName; a port has a number in 1–65535, a supported protocol, a qualified
  ``appProtocol`` and a DNS label name, required when the subset has more than one port;
* ``kubectl get ep`` prints NAME, ENDPOINTS (``ip:port`` of the ready addresses, at most three, then
  ``+ N more...``) and AGE.

One deliberate difference: kube-apiserver refuses loopback addresses (``ValidateEndpointIP``). In kubelab every
pod shares its node's network, and a local node's address is often 127.0.0.1, so loopback is accepted here; the
unspecified and link-local ranges are still refused.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid, is_dns1123_subdomain, is_valid_ip, required, validate_dns1123_label
from apiserver.registry.services import validate_app_protocol, validate_named_port
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

MAX_SHOWN = 3  # kubectl's endpoints cells list three entries, then "+ N more..."


def validate_endpoint_ip(value: str, path: str) -> list[Cause]:
    """``ValidateEndpointIP`` without the loopback rule (see the module docstring)."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return [invalid(path, value, "must be a valid IP address")]
    causes: list[Cause] = []
    if ip.is_unspecified:
        causes.append(invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_link_local:
        causes.append(invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if any(ip in net for net in _LINK_LOCAL_MULTICAST):
        causes.append(invalid(path, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
    return causes


_LINK_LOCAL_MULTICAST = (ipaddress.ip_network("224.0.0.0/24"), ipaddress.ip_network("ff02::/16"))


def validate_node_name(node_name: Any, path: str) -> list[Cause]:
    """``ValidateNodeName``: a DNS subdomain."""
    if node_name is None:
        return []
    return [invalid(path, node_name, msg) for msg in is_dns1123_subdomain(node_name)]


def validate_endpoints(obj: Mapping[str, Any]) -> list[Cause]:
    """``validateEndpointSubsets``."""
    causes: list[Cause] = []
    for i, subset in enumerate(obj.get("subsets") or []):
        path = f"subsets[{i}]"
        addresses, not_ready = subset.get("addresses") or [], subset.get("notReadyAddresses") or []
        if not addresses and not not_ready:
            causes.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for field, items in (("addresses", addresses), ("notReadyAddresses", not_ready)):
            for j, address in enumerate(items):
                causes.extend(_validate_address(address, f"{path}.{field}[{j}]"))
        ports = subset.get("ports") or []
        for j, port in enumerate(ports):
            causes.extend(_validate_port(port, len(ports) > 1, f"{path}.ports[{j}]"))
    return causes


def _validate_address(address: Mapping[str, Any], path: str) -> list[Cause]:
    ip = address.get("ip") or ""
    causes = is_valid_ip(f"{path}.ip", ip)
    if address.get("hostname"):
        causes.extend(validate_dns1123_label(address["hostname"], f"{path}.hostname"))
    causes.extend(validate_node_name(address.get("nodeName"), f"{path}.nodeName"))
    return causes + validate_endpoint_ip(ip, f"{path}.ip")


def _validate_port(port: Mapping[str, Any], require_name: bool, path: str) -> list[Cause]:
    return validate_named_port(port, require_name, path) + validate_app_protocol(port, f"{path}.appProtocol")


def with_more(cells: list[str], count: int, empty: str) -> str:
    """kubectl's list cell: the first three entries, ``+ N more...`` for the rest, ``empty`` when there are none."""
    text = ",".join(cells[:MAX_SHOWN])
    if count > MAX_SHOWN:
        return f"{text} + {count - MAX_SHOWN} more..."
    return text or empty


def format_endpoints(obj: Mapping[str, Any]) -> str:
    """``formatEndpoints``: ``ip:port`` of every ready address and port (just ``ip`` in a subset without ports)."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return "<none>"
    cells: list[str] = []
    for subset in subsets:
        addresses = [a.get("ip") or "" for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            cells.extend(addresses)
        for port in ports:
            cells.extend(_join_host_port(ip, port.get("port") or 0) for ip in addresses)
    return with_more(cells, len(cells), "")


def _join_host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class EndpointsStrategy(Strategy):
    kind = "Endpoints"
    resource = "endpoints"
    singular = "endpoints"
    short_names = ("ep",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        default_endpoints(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        default_endpoints(new)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_endpoints(obj)

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Endpoints", description="The set of all endpoints is the union of all subsets. "
                            "Addresses are placed into subsets according to the IPs they share. A single address "
                            "with multiple ports, some of which are ready and some of which are not (because they "
                            "come from different containers) will result in the address being displayed in "
                            "different subsets for the different ports. No address will appear in both Addresses and "
                            "NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a "
                            "service."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), format_endpoints(obj), since(metadata.get("creationTimestamp"))]


def kubernetes_endpoints(ip: str, port: int) -> Object:
    """``default/kubernetes``'s Endpoints, which kube-apiserver keeps itself (the Service has no selector): its own
    address and port, named ``https`` as the Service's port; labelled so no mirroring controller copies it."""
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}


def endpoints_address(obj: Object) -> str | None:
    """The first ``ip:port`` the Endpoints list (the apiserver ``default/kubernetes`` points at)."""
    for subset in obj.get("subsets") or []:
        addresses, ports = subset.get("addresses") or [], subset.get("ports") or []
        if addresses and ports:
            return f"{addresses[0].get('ip')}:{ports[0].get('port')}"
    return None


def default_endpoints(obj: Object) -> None:
    """``SetDefaults_EndpointPort``: TCP."""
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or []:
            if not port.get("protocol"):
                port["protocol"] = "TCP"
