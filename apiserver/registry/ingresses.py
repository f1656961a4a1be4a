"""Ingresses (networking.k8s.io/v1): HTTP routes from hosts and paths to Services, and their ``/status``.

``ValidateIngressSpec`` as kube words it: rules or a ``defaultBackend``; a rule's host a DNS name (a leading
``*.`` allowed), never an IP; every HTTP path with a ``pathType`` (Exact and Prefix paths absolute); each backend
exactly one of ``service`` (a name, and a port name or number, not both) and ``resource``; ``ingressClassName`` a
DNS subdomain. ``status.loadBalancer`` is written through ``/status`` (an ingress controller's). ``kubectl get
ingress`` prints NAME, CLASS, HOSTS, ADDRESS, PORTS, AGE (``printIngress``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    forbidden,
    invalid,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    required,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
MAX_HOSTS_SHOWN = 3


class IngressStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "Ingress"
    resource = "ingresses"
    singular = "ingress"
    short_names = ("ing",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Object) -> list[Cause]:
        return validate_ingress_spec(obj.get("spec") or {}, "spec")

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        causes: list[Cause] = []
        entries = ((new.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        for i, entry in enumerate(entries):
            path = f"status.loadBalancer.ingress[{i}]"
            if entry.get("ip"):
                try:
                    ipaddress.ip_address(entry["ip"])
                except ValueError:
                    causes.append(invalid(f"{path}.ip", entry["ip"], "must be a valid IP address"))
            if entry.get("hostname"):
                causes.extend(invalid(f"{path}.hostname", entry["hostname"], msg)
                              for msg in is_dns1123_subdomain(entry["hostname"]))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Class", description="The name of the IngressClass resource that should be used"),
                TableColumn("Hosts", description="Hosts that incoming requests are matched against before the "
                                                 "ingress rule"),
                TableColumn("Address", description="Address is a list containing ingress points for the "
                                                   "load-balancer"),
                TableColumn("Ports", description="Ports of TLS configurations that open"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return [metadata.get("name", ""), spec.get("ingressClassName") or "<none>", hosts_cell(spec.get("rules")),
                address_cell(obj.get("status") or {}), "80, 443" if spec.get("tls") else "80",
                since(metadata.get("creationTimestamp"))]


def hosts_cell(rules: list[Mapping[str, Any]] | None) -> str:
    """``formatHosts``: the first three hosts, ``* `` when none is named."""
    rules = rules or []
    hosts = [rule["host"] for rule in rules[:MAX_HOSTS_SHOWN] if rule.get("host")]
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - MAX_HOSTS_SHOWN} more..." if len(rules) > MAX_HOSTS_SHOWN else text


def address_cell(status: Mapping[str, Any]) -> str:
    """``ingressLoadBalancerStatusStringer`` (wide, as the server renders): IPs and hostnames, comma-joined."""
    entries = (status.get("loadBalancer") or {}).get("ingress") or []
    return ",".join(entry.get("ip") or entry.get("hostname") or "" for entry in entries
                    if entry.get("ip") or entry.get("hostname"))


def validate_ingress_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    rules = spec.get("rules") or []
    backend = spec.get("defaultBackend")
    if backend is not None:
        causes.extend(validate_backend(backend, f"{path}.defaultBackend"))
    elif not rules:
        causes.append(invalid(path, "null", "either `defaultBackend` or `rules` must be specified"))
    for i, rule in enumerate(rules):
        causes.extend(_validate_rule(rule, f"{path}.rules[{i}]"))
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate(tls.get("hosts") or []):
            causes.extend(_validate_host(host, f"{path}.tls[{i}].hosts[{j}]"))
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        causes.extend(invalid(f"{path}.ingressClassName", class_name, msg) for msg in is_dns1123_subdomain(class_name))
    return causes


def _validate_host(host: str, path: str) -> list[Cause]:
    try:
        ipaddress.ip_address(host)
        return [invalid(path, host, "must be a DNS name, not an IP address")]
    except ValueError:
        pass
    name = host[2:] if host.startswith("*.") else host
    return [invalid(path, host, msg) for msg in is_dns1123_subdomain(name)]


def _validate_rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    causes = _validate_host(rule["host"], f"{path}.host") if rule.get("host") else []
    http = rule.get("http")
    if http is None:
        return causes
    paths = http.get("paths") or []
    if not paths:
        causes.append(required(f"{path}.http.paths"))
    for i, item in enumerate(paths):
        item_path = f"{path}.http.paths[{i}]"
        value = item.get("path") or ""
        path_type = item.get("pathType")
        if path_type is None:
            causes.append(required(f"{item_path}.pathType", "pathType must be specified"))
        elif path_type not in PATH_TYPES:
            causes.append(not_supported(f"{item_path}.pathType", path_type, PATH_TYPES))
        if ((path_type in ("Exact", "Prefix") or (value and path_type == "ImplementationSpecific"))
                and not value.startswith("/")):
            causes.append(invalid(f"{item_path}.path", value, "must be an absolute path"))
        causes.extend(validate_backend(item.get("backend") or {}, f"{item_path}.backend"))
    return causes


def validate_backend(backend: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateIngressBackend``: a service (name, port name or number) or a typed resource, exactly one."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return [required(f"{path}.resource.{f}") for f in ("kind", "name") if not resource.get(f)]
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    causes: list[Cause] = []
    name = service.get("name") or ""
    if not name:
        causes.append(required(f"{path}.service.name"))
    else:
        causes.extend(invalid(f"{path}.service.name", name, msg) for msg in is_dns1123_subdomain(name))
    port = service.get("port") or {}
    port_name, number = port.get("name") or "", port.get("number")
    if port_name and number:
        causes.append(invalid(f"{path}.service.port", "", "cannot set both port name & port number"))
    elif port_name:
        causes.extend(invalid(f"{path}.service.port.name", port_name, msg) for msg in is_valid_port_name(port_name))
    elif number:
        causes.extend(invalid(f"{path}.service.port.number", number, msg) for msg in is_valid_port_num(number))
    else:
        causes.append(forbidden(f"{path}.service.port", "port name or number is required"))
    return causes
