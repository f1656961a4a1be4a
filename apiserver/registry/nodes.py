"""Nodes (core/v1, cluster-scoped): taints, capacity, and the STATUS/ROLES table ``kubectl get nodes`` prints."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    duplicate,
    forbidden,
    go_quote,
    invalid,
    is_valid_label_value,
    validate_label_name,
)
from apiserver.registry.podscheduling import validate_taint_effect
from apiserver.registry.qos import reject_unparsable, validate_quantity_value
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

NODE_ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
NODE_ROLE_LABEL = "kubernetes.io/role"


class NodeStrategy(Strategy):
    kind = "Node"
    resource = "nodes"
    singular = "node"
    namespaced = False
    short_names = ("no",)
    subresources = ("status", "proxy")
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        self._decode(obj)
        (obj.get("status") or {}).pop("config", None)

    def validate(self, obj: Object) -> list[Cause]:
        causes = validate_taints((obj.get("spec") or {}).get("taints"), "metadata.taints")
        causes.extend(_validate_node_resources(obj))
        causes.extend(_validate_pod_cidrs((obj.get("spec") or {}).get("podCIDRs")))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self._decode(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + _validate_node_update(new, old)

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        super().prepare_for_status_update(new, old)
        self._decode(new)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return _validate_node_resources(new) + _validate_node_update(new, old)

    def _decode(self, obj: Object) -> None:
        """Quantities that do not parse fail decoding; ``allocatable`` defaults to ``capacity``."""
        status = obj.get("status")
        if not status:
            return
        lists = [status[key] for key in ("capacity", "allocatable") if status.get(key)]
        reject_unparsable(iter(lists), self.kind, self.version)
        if status.get("allocatable") is None and status.get("capacity") is not None:
            status["allocatable"] = dict(status["capacity"])

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["spec.unschedulable"] = "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
        return fields

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Status", description="The status of the node"),
            TableColumn("Roles", description="The roles of the node"),
            AGE_COLUMN,
            TableColumn("Version", description="Kubelet Version reported by the node."),
            TableColumn("Internal-IP", priority=1, description="List of addresses reachable to the node."),
            TableColumn("External-IP", priority=1, description="List of addresses reachable to the node."),
            TableColumn("OS-Image", priority=1, description="OS Image reported by the node from /etc/os-release "
                                                            "(e.g. Debian GNU/Linux 7 (wheezy))."),
            TableColumn("Kernel-Version", priority=1, description="Kernel Version reported by the node from "
                                                                  "'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
            TableColumn("Container-Runtime", priority=1, description="ContainerRuntime Version reported by the node "
                                                                     "through runtime remote API (e.g. "
                                                                     "containerd://1.4.2)."),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, status = obj.get("metadata") or {}, obj.get("status") or {}
        info = status.get("nodeInfo") or {}
        roles = ",".join(node_roles(metadata.get("labels"))) or "<none>"
        return [metadata.get("name", ""), node_status(obj), roles, since(metadata.get("creationTimestamp")),
                info.get("kubeletVersion") or "", _address(status, "InternalIP"), _address(status, "ExternalIP"),
                info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
                info.get("containerRuntimeVersion") or "<unknown>"]


def node_status(node: Mapping[str, Any]) -> str:
    """``Ready`` / ``NotReady`` from the Ready condition (``Unknown`` without one), ``,SchedulingDisabled``."""
    states = []
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def node_roles(labels: Mapping[str, Any] | None) -> list[str]:
    """``findNodeRoles``: ``node-role.kubernetes.io/<role>`` keys and ``kubernetes.io/role`` values, sorted."""
    roles = set()
    for key, value in (labels or {}).items():
        if key.startswith(NODE_ROLE_LABEL_PREFIX) and key[len(NODE_ROLE_LABEL_PREFIX):]:
            roles.add(key[len(NODE_ROLE_LABEL_PREFIX):])
        elif key == NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _address(status: Mapping[str, Any], address_type: str) -> str:
    for address in status.get("addresses") or []:
        if address.get("type") == address_type:
            return str(address.get("address", ""))
    return "<none>"


def validate_taints(taints: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    """``validateNodeTaints`` (Kubernetes reports them under ``metadata.taints``): unique per key and effect."""
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints or []):
        item = f"{path}[{i}]"
        key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
        causes.extend(validate_label_name(key, f"{item}.key"))
        errs = is_valid_label_value(value)
        if errs:
            causes.append(invalid(f"{item}.value", value, ";".join(errs)))
        causes.extend(validate_taint_effect(effect, False, f"{item}.effect"))
        if (key, effect) in seen:
            rendered = (f"core.Taint{{Key:{go_quote(key)}, Value:{go_quote(value)}, Effect:{go_quote(effect)}, "
                        "TimeAdded:(*v1.Time)(nil)}")
            causes.append(duplicate(item, Raw(rendered), "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return causes


def _validate_node_resources(node: Mapping[str, Any]) -> list[Cause]:
    status = node.get("status") or {}
    causes: list[Cause] = []
    for key in ("capacity", "allocatable"):
        for name, value in (status.get(key) or {}).items():
            causes.extend(validate_quantity_value(name, value, f"status.{key}.{name}"))
    return causes


def _validate_pod_cidrs(cidrs: list[str] | None) -> list[Cause]:
    causes: list[Cause] = []
    for i, cidr in enumerate(cidrs or []):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            causes.append(invalid(f"spec.podCIDRs[{i}]", cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                                               "2001:db8::/64)"))
    return causes


def _validate_node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    seen = []
    for i, address in enumerate((new.get("status") or {}).get("addresses") or []):
        if address in seen:
            rendered = (f"core.NodeAddress{{Type:{go_quote(address.get('type', ''))}, "
                        f"Address:{go_quote(address.get('address', ''))}}}")
            causes.append(duplicate(f"status.addresses[{i}]", Raw(rendered)))
        seen.append(address)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if old_spec.get("podCIDRs") and new_spec.get("podCIDRs") != old_spec.get("podCIDRs"):
        causes.append(forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'))
    if old_spec.get("providerID") and new_spec.get("providerID") != old_spec.get("providerID"):
        causes.append(forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'))
    if new_spec.get("externalID") != old_spec.get("externalID"):
        causes.append(forbidden("spec.externalID", "may not be updated"))
    return causes
