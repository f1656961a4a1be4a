"""Services (core/v1): defaults, a cluster IP from 10.96.0.0/12, node ports, validation, ``kubectl get svc``.

kubelab has no proxy, but users still see the allocated addresses. Instead of a bitmap allocator backed by
storage, an address is derived from a hash of ``namespace/name`` (``default/kubernetes`` keeps the service
range's first address, 10.96.0.1, as in every cluster): stable across restarts and, with a million addresses,
collision-free in practice. Node ports are derived the same way within 30000-32767. Updates keep what was
allocated when the new body leaves it empty (``patchAllocatedValues``).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    duplicate,
    forbidden,
    go_quote,
    go_string_slice,
    invalid,
    is_valid_ip,
    is_valid_port_num,
    name_is_dns1035_label,
    not_supported,
    required,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
    validate_qualified_name,
)
from apiserver.registry.podspec import PROTOCOLS, validate_choice, validate_port_num_or_name
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import format_labels, since

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = range(30000, 32768)
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
DEFAULT_CLIENT_IP_TIMEOUT_SECONDS = 10800
MAX_CLIENT_IP_TIMEOUT_SECONDS = 86400


class ServiceStrategy(Strategy):
    kind = "Service"
    resource = "services"
    singular = "service"
    short_names = ("svc",)
    categories = ("all",)
    subresources = ("status", "proxy")
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return name_is_dns1035_label(name)

    def prepare_for_create(self, obj: Object) -> None:
        default_service(obj)
        allocate(obj)
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Object) -> list[Cause]:
        return validate_service(obj) + validate_allocation(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        default_service(new)
        _drop_type_dependent_fields(new, old)
        _keep_allocated(new, old)
        allocate(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return _validate_cluster_ips_unchanged(new, old) + self.validate(new)

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        spec = obj.get("spec") or {}
        fields["spec.clusterIP"] = spec.get("clusterIP") or ""
        fields["spec.type"] = spec.get("type") or ""
        return fields

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Type", description="type determines how the Service is exposed."),
            TableColumn("Cluster-IP", description="clusterIP is the IP address of the service."),
            TableColumn("External-IP", description="externalIPs is a list of IP addresses for which nodes in the "
                                                   "cluster will also accept traffic for this service."),
            TableColumn("Port(s)", description="The list of ports that are exposed by this service."),
            AGE_COLUMN,
            TableColumn("Selector", priority=1, description="Route service traffic to pods with label keys and "
                                                            "values matching this selector."),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        cluster_ips = spec.get("clusterIPs") or []
        ports = ",".join(_port_cell(p) for p in spec.get("ports") or []) or "<none>"
        return [metadata.get("name", ""), spec.get("type") or "", cluster_ips[0] if cluster_ips else "<none>",
                external_ip(obj), ports, since(metadata.get("creationTimestamp")), format_labels(spec.get("selector"))]


# === defaults and allocation ===============================================================================


def default_service(service: Object) -> None:
    """``SetDefaults_Service``."""
    spec = service.setdefault("spec", {})
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        timeout = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds")
        if timeout is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT_SECONDS}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or []:
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] != "ExternalName":
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _externally_accessible(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("LoadBalancer", "NodePort") or (
        spec.get("type") == "ClusterIP" and bool(spec.get("externalIPs")))


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == "NodePort" or (
        spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True))


def allocate(service: Object) -> None:
    """Fill ``clusterIP(s)``, IP families and node ports the way the allocators would."""
    metadata, spec = service.get("metadata") or {}, service["spec"]
    key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    if spec.get("type") == "ExternalName":
        return
    if not spec.get("clusterIP") and spec.get("clusterIPs"):
        spec["clusterIP"] = spec["clusterIPs"][0]
    if not spec.get("clusterIP"):
        spec["clusterIP"] = _derived_cluster_ip(key)
    if not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if _needs_node_ports(spec):
        for i, port in enumerate(spec.get("ports") or []):
            if not port.get("nodePort"):
                port["nodePort"] = _derived_node_port(f"{key}/{i}/{port.get('protocol')}/{port.get('port')}")


def _derived_cluster_ip(key: str) -> str:
    if key == "default/kubernetes":
        return str(SERVICE_CIDR.network_address + 1)
    size = SERVICE_CIDR.num_addresses - 12  # skip .0-.9 (reserved-looking) and the broadcast address
    return str(SERVICE_CIDR.network_address + 10 + _hash(key) % size)


def kubernetes_service(port: int) -> Object:
    """``default/kubernetes``, the Service every cluster has for its apiserver (kube-apiserver's bootstrap
    controller creates it): 10.96.0.1:443 (named ``https`` as everywhere), targeting the apiserver's own port."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "sessionAffinity": "None",
                     "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}]}}


def _derived_node_port(key: str) -> int:
    return NODE_PORT_RANGE.start + _hash(key) % len(NODE_PORT_RANGE)


def _hash(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def _drop_type_dependent_fields(new: Object, old: Object) -> None:
    """A type change releases what only the old type needed, if the body still carries the old values."""
    spec, old_spec = new["spec"], old.get("spec") or {}
    if (old_spec.get("type") != "ExternalName" and spec.get("type") == "ExternalName"
            and (spec.get("clusterIPs") or [spec.get("clusterIP")]) == (old_spec.get("clusterIPs") or [None])):
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            spec.pop(key, None)
    if _needs_node_ports(old_spec) and not _needs_node_ports(spec):
        old_node_ports = [p.get("nodePort") for p in old_spec.get("ports") or []]
        if [p.get("nodePort") for p in spec.get("ports") or []] == old_node_ports:
            for port in spec.get("ports") or []:
                port.pop("nodePort", None)
    if not _externally_accessible(spec) and spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def _keep_allocated(new: Object, old: Object) -> None:
    """An update that omits allocated values keeps them (``patchAllocatedValues``)."""
    spec, old_spec = new["spec"], old.get("spec") or {}
    if (spec.get("type") != "ExternalName" and old_spec.get("type") != "ExternalName"
            and not spec.get("clusterIP") and not spec.get("clusterIPs")):
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key in old_spec and key not in spec:
                spec[key] = old_spec[key]
    if _needs_node_ports(spec) and _needs_node_ports(old_spec):
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old_spec.get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort") and old_ports.get((port.get("port"), port.get("protocol"))):
                port["nodePort"] = old_ports[(port.get("port"), port.get("protocol"))]


def validate_allocation(service: Mapping[str, Any]) -> list[Cause]:
    """What the allocators refuse: a requested cluster IP or node port outside the configured ranges."""
    spec = service.get("spec") or {}
    causes: list[Cause] = []
    cluster_ips = spec.get("clusterIPs") or []
    for ip in cluster_ips:
        if ip == "None":
            continue
        try:
            inside = ipaddress.ip_address(ip) in SERVICE_CIDR
        except ValueError:
            continue  # reported by validate_service
        if not inside:
            causes.append(invalid("spec.clusterIPs", cluster_ips,
                                  f"failed to allocate IP {ip}: provided IP is not in the valid range. The range of "
                                  f"valid IPs is {SERVICE_CIDR}"))
    for i, port in enumerate(spec.get("ports") or []):
        node_port = port.get("nodePort") or 0
        if node_port and node_port not in NODE_PORT_RANGE:
            causes.append(invalid(f"spec.ports[{i}].nodePort", node_port,
                                  "provided port is not in the valid range. The range of valid ports is "
                                  f"{NODE_PORT_RANGE.start}-{NODE_PORT_RANGE.stop - 1}"))
    return causes


# === validation ============================================================================================


def _is_headless(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == "ClusterIP" and spec.get("clusterIPs") == ["None"]


def validate_service(service: Mapping[str, Any]) -> list[Cause]:
    """``ValidateService`` (the parts a single-stack cluster without load balancers exercises)."""
    spec = service.get("spec") or {}
    service_type = spec.get("type") or ""
    ports = spec.get("ports") or []
    causes: list[Cause] = []
    if not ports and not _is_headless(spec) and service_type != "ExternalName":
        causes.append(required("spec.ports"))
    cluster_ips = spec.get("clusterIPs") or []
    if service_type in ("LoadBalancer", "NodePort") and cluster_ips[:1] == ["None"]:
        causes.append(invalid("spec.clusterIPs[0]", cluster_ips[0],
                              f"may not be set to 'None' for {service_type} services"))
    if service_type == "ExternalName":
        if cluster_ips:
            causes.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        cname = (spec.get("externalName") or "").removesuffix(".")
        if cname:
            causes.extend(validate_dns1123_subdomain(cname, "spec.externalName"))
        else:
            causes.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        causes.extend(_validate_service_port(port, len(ports) > 1, names, f"spec.ports[{i}]"))
    if spec.get("selector") is not None:
        causes.extend(validate_labels(spec["selector"], "spec.selector"))
    causes.extend(_validate_session_affinity(spec))
    for i, ip in enumerate(cluster_ips):
        if i == 0 and ip == "None":
            if len(cluster_ips) > 1:
                causes.append(invalid("spec.clusterIPs", cluster_ips, "'None' must be the first and only value"))
            continue
        causes.extend(is_valid_ip(f"spec.clusterIPs[{i}]", ip))
    if cluster_ips and spec.get("clusterIP") != cluster_ips[0]:
        causes.append(invalid("spec.clusterIPs", cluster_ips, "first value must match `clusterIP`"))
    for i, ip in enumerate(spec.get("externalIPs") or []):
        causes.extend(is_valid_ip(f"spec.externalIPs[{i}]", ip))
    if not service_type:
        causes.append(required("spec.type"))
    elif service_type not in SERVICE_TYPES:
        causes.append(not_supported("spec.type", service_type, SERVICE_TYPES))
    causes.extend(_validate_port_uniqueness(spec))
    causes.extend(_validate_traffic_policies(spec))
    return causes


def validate_named_port(port: Mapping[str, Any], require_name: bool, path: str,
                        names: set[str] | None = None) -> list[Cause]:
    """What a Service port and an Endpoints port share: a DNS label name, required when there are several ports
    (and unique among ``names`` when given), a number in 1–65535 and a supported protocol."""
    causes: list[Cause] = []
    name = port.get("name") or ""
    if require_name and not name:
        causes.append(required(f"{path}.name"))
    elif name:
        causes.extend(validate_dns1123_label(name, f"{path}.name"))
        if names is not None and name in names:
            causes.append(duplicate(f"{path}.name", name))
        if names is not None:
            names.add(name)
    number = port.get("port") or 0
    causes.extend(invalid(f"{path}.port", number, msg) for msg in is_valid_port_num(number))
    return causes + validate_choice(port.get("protocol"), PROTOCOLS, f"{path}.protocol")


def validate_app_protocol(port: Mapping[str, Any], path: str) -> list[Cause]:
    app_protocol = port.get("appProtocol")
    return [] if app_protocol is None else validate_qualified_name(app_protocol, path)


def _validate_service_port(port: Mapping[str, Any], require_name: bool, names: set[str], path: str) -> list[Cause]:
    return (validate_named_port(port, require_name, path, names)
            + validate_port_num_or_name(port.get("targetPort"), f"{path}.targetPort")
            + validate_app_protocol(port, f"{path}.appProtocol"))


def _validate_session_affinity(spec: Mapping[str, Any]) -> list[Cause]:
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        return [required("spec.sessionAffinity")]
    if affinity not in SESSION_AFFINITIES:
        return [not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES)]
    config = spec.get("sessionAffinityConfig")
    if affinity == "None" and config is not None:
        return [forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")]
    if affinity == "ClientIP":
        timeout = ((config or {}).get("clientIP") or {}).get("timeoutSeconds")
        if timeout is None:
            return [required("spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                             "when session affinity type is ClientIP")]
        if not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT_SECONDS:
            return [invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                            f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT_SECONDS}")]
    return []


def _validate_port_uniqueness(spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    seen_node_ports: set[tuple[Any, Any]] = set()
    seen_ports: set[tuple[Any, Any]] = set()
    for i, port in enumerate(spec.get("ports") or []):
        protocol, node_port, number = port.get("protocol") or "", port.get("nodePort") or 0, port.get("port") or 0
        if spec.get("type") == "ClusterIP" and node_port:
            causes.append(forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
        if node_port:
            if (protocol, node_port) in seen_node_ports:
                causes.append(duplicate(f"spec.ports[{i}].nodePort", node_port))
            seen_node_ports.add((protocol, node_port))
        if (protocol, number) in seen_ports:
            rendered = (f"core.ServicePort{{Name:\"\", Protocol:{go_quote(protocol)}, AppProtocol:(*string)(nil), "
                        f"Port:{number}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}")
            causes.append(duplicate(f"spec.ports[{i}]", Raw(rendered)))
        seen_ports.add((protocol, number))
    return causes


def _validate_traffic_policies(spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    external = spec.get("externalTrafficPolicy") or ""
    if not _externally_accessible(spec):
        if external:
            causes.append(invalid("spec.externalTrafficPolicy", external,
                                  "may only be set for externally-accessible services"))
    elif not external:
        causes.append(required("spec.externalTrafficPolicy"))
    elif external not in TRAFFIC_POLICIES:
        causes.append(not_supported("spec.externalTrafficPolicy", external, TRAFFIC_POLICIES))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
        causes.append(required("spec.internalTrafficPolicy"))
    elif internal is not None and internal not in TRAFFIC_POLICIES:
        causes.append(not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES))
    if spec.get("allocateLoadBalancerNodePorts") is not None and spec.get("type") != "LoadBalancer":
        causes.append(forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is "
                                                                      "'LoadBalancer'"))
    return causes


def _validate_cluster_ips_unchanged(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Allocated addresses stay: an update may not move a service to another cluster IP."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    if _is_headless(spec) and _is_headless(old_spec):
        return []
    ips, old_ips = spec.get("clusterIPs") or [], old_spec.get("clusterIPs") or []
    if old_ips and not ips:
        return [invalid("spec.clusterIPs[0]", Raw(go_string_slice(ips or None)), "primary clusterIP can not be unset")]
    return [invalid(f"spec.clusterIPs[{i}]", ips, "may not change once set")
            for i, ip in enumerate(old_ips) if i < len(ips) and ips[i] != ip]


# === table =================================================================================================


def _port_cell(port: Mapping[str, Any]) -> str:
    if port.get("nodePort"):
        return f"{port.get('port')}:{port['nodePort']}/{port.get('protocol')}"
    return f"{port.get('port')}/{port.get('protocol')}"


def external_ip(service: Mapping[str, Any]) -> str:
    """``getServiceExternalIP``: external IPs, load-balancer ingress, ``<pending>`` or ``<none>``."""
    spec = service.get("spec") or {}
    external = spec.get("externalIPs") or []
    service_type = spec.get("type")
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if service_type == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        addresses = sorted({i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")})
        lb = ",".join(addresses)  # not clipped: kube-apiserver renders tables as -o wide
        if external:
            return ",".join([*([lb] if lb else []), *external])
        return lb or "<pending>"
    if service_type == "ExternalName":
        return spec.get("externalName") or ""
    return "<unknown>"
