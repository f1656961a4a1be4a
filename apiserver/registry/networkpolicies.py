"""NetworkPolicies (networking.k8s.io/v1): which traffic may reach and leave the selected pods.

Stored, defaulted and validated as kube-apiserver does (``SetDefaults_NetworkPolicy``: ports' protocol TCP,
``policyTypes`` Ingress, plus Egress when egress rules exist; ``ValidateNetworkPolicySpec``: selectors, ports,
peers, ipBlocks). Enforcing them is a network plugin's job; kubelab's pod network does not (kube-apiserver alone
does not either). ``kubectl get netpol`` prints NAME, POD-SELECTOR, AGE.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    invalid,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    required,
    too_many,
    validate_label_selector,
)
from apiserver.registry import selectors
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

PROTOCOLS = ("SCTP", "TCP", "UDP")
POLICY_TYPES = ("Ingress", "Egress")
DIRECTIONS = (("ingress", "from"), ("egress", "to"))


class NetworkPolicyStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "NetworkPolicy"
    resource = "networkpolicies"
    singular = "networkpolicy"
    short_names = ("netpol",)

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("podSelector", {})
        for direction, _ in DIRECTIONS:
            for rule in spec.get(direction) or []:
                for port in rule.get("ports") or []:
                    port.setdefault("protocol", "TCP")
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = validate_label_selector(spec.get("podSelector"), "spec.podSelector")
        for direction, peers in DIRECTIONS:
            for i, rule in enumerate(spec.get(direction) or []):
                path = f"spec.{direction}[{i}]"
                for j, port in enumerate(rule.get("ports") or []):
                    causes.extend(_validate_port(port, f"{path}.ports[{j}]"))
                for j, peer in enumerate(rule.get(peers) or []):
                    causes.extend(_validate_peer(peer, f"{path}.{peers}[{j}]"))
        types = spec.get("policyTypes") or []
        for i, policy_type in enumerate(types):
            if policy_type not in POLICY_TYPES:
                causes.append(not_supported(f"spec.policyTypes[{i}]", policy_type, POLICY_TYPES))
        if len(types) > len(POLICY_TYPES):
            causes.append(too_many("spec.policyTypes", len(types), len(POLICY_TYPES)))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Pod-Selector", description="podSelector selects the pods to which this "
                                                                     "NetworkPolicy object applies."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), selectors.format_label_selector((obj.get("spec") or {}).get("podSelector")),
                since(metadata.get("creationTimestamp"))]


def _validate_port(port: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        causes.append(not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    value, end = port.get("port"), port.get("endPort")
    if isinstance(value, int):
        causes.extend(invalid(f"{path}.port", value, msg) for msg in is_valid_port_num(value))
        if end is not None:
            if end < value:
                causes.append(invalid(f"{path}.endPort", end, "must be greater than or equal to `port`"))
            causes.extend(invalid(f"{path}.endPort", end, msg) for msg in is_valid_port_num(end))
    elif value is not None:
        causes.extend(invalid(f"{path}.port", value, msg) for msg in is_valid_port_name(str(value)))
        if end is not None:
            causes.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
    elif end is not None:
        causes.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    return causes


def _validate_peer(peer: Mapping[str, Any], path: str) -> list[Cause]:
    pod, namespace, block = peer.get("podSelector"), peer.get("namespaceSelector"), peer.get("ipBlock")
    if block is not None and (pod is not None or namespace is not None):
        return [invalid(path, "", "may not specify both ipBlock and another peer")]
    if block is None and pod is None and namespace is None:
        return [required(path, "must specify a peer")]
    causes: list[Cause] = []
    if pod is not None:
        causes.extend(validate_label_selector(pod, f"{path}.podSelector"))
    if namespace is not None:
        causes.extend(validate_label_selector(namespace, f"{path}.namespaceSelector"))
    if block is not None:
        causes.extend(_validate_ip_block(block, f"{path}.ipBlock"))
    return causes


def _validate_ip_block(block: Mapping[str, Any], path: str) -> list[Cause]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(f"{path}.cidr")]
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [invalid(f"{path}.cidr", cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    causes: list[Cause] = []
    for i, item in enumerate(block.get("except") or []):
        try:
            excluded = ipaddress.ip_network(item, strict=False)
        except ValueError:
            causes.append(invalid(f"{path}.except[{i}]", item, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                                                 "2001:db8::/64)"))
            continue
        if excluded.version != network.version or not excluded.subnet_of(network) or excluded == network:  # type: ignore[arg-type]
            causes.append(invalid(f"{path}.except[{i}]", item, "must be a strict subset of `cidr`"))
    return causes
