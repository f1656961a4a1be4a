"""EndpointSlices (discovery.k8s.io/v1): a Service's endpoints in slices, kept by the endpointslice controller.

What kube-apiserver does, and where:

* ``SetDefaults_EndpointPort``: a port's ``name`` defaults to ``""`` and its protocol to TCP; ``deprecatedTopology``
  cannot be written through v1 and is dropped;
* ``ValidateEndpointSlice``: ``addressType`` is IPv4, IPv6 or FQDN (immutable); at most 1000 endpoints, each with
  1–100 addresses of that type, a DNS label hostname, a DNS subdomain nodeName, at most 8 distinct zone hints; port
  names unique and DNS labels, protocols supported, ``appProtocol`` a qualified name. Addresses follow the same
  rule as Endpoints' (``ValidateEndpointIP``, loopback accepted in kubelab: see ``endpoints``);
* ``kubectl get endpointslices`` prints NAME, ADDRESSTYPE, PORTS, ENDPOINTS (three entries then ``+ N more...``,
  ``<unset>`` when empty) and AGE.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    duplicate,
    invalid,
    is_dns1123_subdomain,
    is_valid_label_value,
    not_supported,
    required,
    too_many,
    validate_dns1123_label,
    validate_immutable,
)
from apiserver.registry.endpoints import validate_endpoint_ip, validate_node_name, with_more
from apiserver.registry.podspec import PROTOCOLS, validate_choice
from apiserver.registry.services import validate_app_protocol
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000
MAX_ZONE_HINTS = 8


class EndpointSliceStrategy(Strategy):
    group = "discovery.k8s.io"
    kind = "EndpointSlice"
    resource = "endpointslices"
    singular = "endpointslice"

    def spec_changed(self, new: Object, old: Object) -> bool:
        """A slice has no spec: any change but metadata bumps its generation (``PrepareForUpdate``)."""
        return {k: v for k, v in new.items() if k != "metadata"} != {k: v for k, v in old.items() if k != "metadata"}

    def prepare_for_create(self, obj: Object) -> None:
        default_endpoint_slice(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        default_endpoint_slice(new)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_endpoint_slice(obj)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + validate_immutable(new.get("addressType"), old.get("addressType"), "addressType")

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("AddressType", description="addressType specifies the type of address carried by this "
                            "EndpointSlice. All addresses in this slice must be the same type. This field is "
                            "immutable after creation. The following address types are currently supported: * IPv4: "
                            "Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a "
                            "Fully Qualified Domain Name."),
                TableColumn("Ports", description="ports specifies the list of network ports exposed by each "
                            "endpoint in this slice. Each port must have a unique name. When ports is empty, it "
                            "indicates that there are no defined ports. When a port is defined with a nil port value, "
                            "it indicates \"all ports\". Each slice may include a maximum of 100 ports."),
                TableColumn("Endpoints", description="endpoints is a list of unique endpoints in this slice. Each "
                            "slice may include a maximum of 1000 endpoints."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        ports = obj.get("ports") or []
        port_cells = [str(p["port"]) if p.get("port") is not None else p.get("name") or "*" for p in ports]
        addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
        return [metadata.get("name", ""), obj.get("addressType") or "", with_more(port_cells, len(ports), "<unset>"),
                with_more(addresses, len(addresses), "<unset>"), since(metadata.get("creationTimestamp"))]


def kubernetes_endpoint_slice(ip: str, port: int) -> Object:
    """The EndpointSlice kube-apiserver keeps beside ``default/kubernetes``'s Endpoints (named like them)."""
    family = "IPv6" if ":" in ip else "IPv4"
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": family, "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


def endpoint_slice_address(obj: Object) -> str | None:
    """The first ``ip:port`` the EndpointSlice lists (the apiserver ``default/kubernetes`` points at)."""
    endpoints, ports = obj.get("endpoints") or [], obj.get("ports") or []
    addresses = (endpoints[0].get("addresses") or []) if endpoints else []
    return f"{addresses[0]}:{ports[0].get('port')}" if addresses and ports else None


def default_endpoint_slice(obj: Object) -> None:
    """``SetDefaults_EndpointPort`` (name ``""``, TCP); the v1 conversion drops ``deprecatedTopology``."""
    for port in obj.get("ports") or []:
        port.setdefault("name", "")
        if port.get("protocol") is None:
            port["protocol"] = "TCP"
    for endpoint in obj.get("endpoints") or []:
        endpoint.pop("deprecatedTopology", None)


def validate_endpoint_slice(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateEndpointSlice`` (the metadata is validated generically)."""
    address_type = obj.get("addressType") or ""
    causes: list[Cause] = []
    if not address_type:
        causes.append(required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        causes.append(not_supported("addressType", address_type, ADDRESS_TYPES))
    return causes + _validate_endpoints(obj.get("endpoints") or [], address_type) + _validate_ports(
        obj.get("ports") or [])


def _validate_endpoints(endpoints: list[Mapping[str, Any]], address_type: str) -> list[Cause]:
    if len(endpoints) > MAX_ENDPOINTS:
        return [too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    causes: list[Cause] = []
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        addresses = endpoint.get("addresses") or []
        if not addresses:
            causes.append(required(f"{path}.addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(too_many(f"{path}.addresses", len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            causes.extend(_validate_address(address, address_type, f"{path}.addresses[{j}]"))
        causes.extend(validate_node_name(endpoint.get("nodeName"), f"{path}.nodeName"))
        if endpoint.get("hostname") is not None:
            causes.extend(validate_dns1123_label(endpoint["hostname"], f"{path}.hostname"))
        causes.extend(_validate_hints(endpoint.get("hints"), f"{path}.hints"))
    return causes


def _validate_address(address: str, address_type: str, path: str) -> list[Cause]:
    if address_type == "FQDN":
        return _validate_fqdn(address, path)
    if address_type not in ("IPv4", "IPv6"):
        return []
    try:
        ok = ipaddress.ip_address(address).version == int(address_type[-1])
    except ValueError:
        ok = False
    causes = [] if ok else [invalid(path, address, f"must be a valid {address_type} address")]
    return causes + validate_endpoint_ip(address, path)


def _validate_fqdn(address: str, path: str) -> list[Cause]:
    """``IsFullyQualifiedDomainName``: a DNS subdomain of at least two labels (a trailing dot is allowed)."""
    name = address.removesuffix(".")
    if not name:
        return [required(path)]
    causes = [invalid(path, address, msg) for msg in is_dns1123_subdomain(name)]
    if not causes and name.count(".") < 1:
        causes.append(invalid(path, address, "should be a domain with at least two segments separated by dots"))
    return causes


def _validate_hints(hints: Mapping[str, Any] | None, path: str) -> list[Cause]:
    zones = (hints or {}).get("forZones") or []
    if len(zones) > MAX_ZONE_HINTS:
        return [too_many(f"{path}.forZones", len(zones), MAX_ZONE_HINTS)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, zone in enumerate(zones):
        name, zone_path = zone.get("name") or "", f"{path}.forZones[{i}].name"
        if name in seen:
            causes.append(duplicate(zone_path, name))
        seen.add(name)
        causes.extend(invalid(zone_path, name, msg) for msg in is_valid_label_value(name))
    return causes


def _validate_ports(ports: list[Mapping[str, Any]]) -> list[Cause]:
    if len(ports) > MAX_PORTS:
        return [too_many("ports", len(ports), MAX_PORTS)]
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        path, name = f"ports[{i}]", port.get("name") or ""
        if name:
            causes.extend(validate_dns1123_label(name, f"{path}.name"))
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
        causes.extend(validate_choice(port.get("protocol"), PROTOCOLS, f"{path}.protocol"))
        causes.extend(validate_app_protocol(port, f"{path}.appProtocol"))
    return causes
