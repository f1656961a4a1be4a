"""IngressClasses (networking.k8s.io/v1): which controller implements an Ingress, and the default class.

``ValidateIngressClass``: ``spec.controller`` is required, a domain-prefixed path of at most 250 characters, and
immutable; ``spec.parameters`` names a kind and a name, with ``scope`` Cluster (defaulted; no namespace) or
Namespace (a namespace required). The class annotated ``ingressclass.kubernetes.io/is-default-class: "true"`` is
given to new Ingresses that name none (``apiserver.admission.defaultingressclass``). ``kubectl get ingressclass``
prints NAME, CONTROLLER, PARAMETERS, AGE.
"""

from __future__ import annotations

import re
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
    too_long,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

MAX_CONTROLLER_LENGTH = 250
SCOPES = ("Cluster", "Namespace")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def validate_domain_prefixed_path(value: str, path: str) -> list[Cause]:
    """``IsDomainPrefixedPath``: ``example.com/path``."""
    if not value:
        return [required(path)]
    domain, sep, rest = value.partition("/")
    if not sep:
        return [invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")")]
    causes = [invalid(path, domain, msg) for msg in is_dns1123_subdomain(domain)]
    if not _PATH_SEGMENT.match(rest):
        causes.append(invalid(path, rest, "Invalid path"))
    return causes


class IngressClassStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "IngressClass"
    resource = "ingressclasses"
    singular = "ingressclass"
    namespaced = False

    def prepare_for_create(self, obj: Object) -> None:
        parameters = (obj.get("spec") or {}).get("parameters")
        if parameters is not None and not parameters.get("scope"):
            parameters["scope"] = "Cluster"

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        controller = spec.get("controller") or ""
        causes = validate_domain_prefixed_path(controller, "spec.controller")
        if len(controller) > MAX_CONTROLLER_LENGTH:
            causes.append(too_long("spec.controller", MAX_CONTROLLER_LENGTH))
        parameters = spec.get("parameters")
        if parameters is not None:
            causes.extend(_validate_parameters(parameters, "spec.parameters"))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        controller = (new.get("spec") or {}).get("controller")
        if controller != (old.get("spec") or {}).get("controller"):
            causes.append(invalid("spec.controller", controller, FIELD_IMMUTABLE_ERROR_MSG))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Controller", description="controller refers to the name of the controller that should "
                                                      "handle this class."),
                TableColumn("Parameters", description="parameters is a link to a custom resource containing "
                                                      "additional configuration for the controller."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return [metadata.get("name", ""), spec.get("controller") or "", parameters_cell(spec.get("parameters")),
                since(metadata.get("creationTimestamp"))]


def parameters_cell(parameters: dict[str, Any] | None) -> str:
    """``printIngressClass``: ``Kind.group/name`` or ``<none>``."""
    if not parameters:
        return "<none>"
    kind = parameters.get("kind") or ""
    if parameters.get("apiGroup"):
        kind = f"{kind}.{parameters['apiGroup']}"
    return f"{kind}/{parameters.get('name') or ''}"


def _validate_parameters(parameters: dict[str, Any], path: str) -> list[Cause]:
    """``validateIngressClassParametersReference``."""
    causes: list[Cause] = []
    for field in ("kind", "name"):
        if not parameters.get(field):
            causes.append(required(f"{path}.{field}"))
    scope, namespace = parameters.get("scope"), parameters.get("namespace")
    if scope not in SCOPES:
        causes.append(not_supported(f"{path}.scope", scope or "", SCOPES))
    elif scope == "Namespace" and not namespace:
        causes.append(required(f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
    elif scope == "Cluster" and namespace:
        causes.append(invalid(f"{path}.namespace", namespace, "`parameters.scope` is set to 'Cluster'"))
    return causes
