"""FlowSchemas (flowcontrol.apiserver.k8s.io/v1): which requests go to which priority level (API Priority and
Fairness).

Stored, defaulted and validated as kube-apiserver does (``ValidateFlowSchema``: a matchingPrecedence from 1 to
10000, a priority level name, a distinguisher ``ByUser``/``ByNamespace``, subjects of kind User, Group or
ServiceAccount naming their one member, rules with verbs and resources or non-resource URLs). ``status.conditions``
carries ``Dangling`` (``apiserver.flowcontrol``). kube's bootstrap objects are created and kept at start
(``apiserver.flowcontrol``). kubelab does not throttle requests by them. ``kubectl get flowschemas`` prints NAME,
PRIORITYLEVEL, MATCHINGPRECEDENCE, DISTINGUISHERMETHOD, AGE, MISSINGPL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import inclusive_range_error, invalid, not_supported, required
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

GROUP = "flowcontrol.apiserver.k8s.io"
MAX_MATCHING_PRECEDENCE = 10_000
DISTINGUISHER_METHODS = ("ByUser", "ByNamespace")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
SUBJECT_FIELDS = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}


class FlowSchemaStrategy(Strategy):
    group = GROUP
    kind = "FlowSchema"
    resource = "flowschemas"
    singular = "flowschema"
    namespaced = False
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        obj.pop("status", None)
        spec = obj.setdefault("spec", {})
        if not spec.get("matchingPrecedence"):
            spec["matchingPrecedence"] = 1000  # SetDefaults_FlowSchemaSpec

    def validate(self, obj: Object) -> list[Cause]:
        return validate_flow_schema_spec(obj.get("spec") or {}, "spec")

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("PriorityLevel", description="priorityLevelConfiguration should reference a "
                                                         "PriorityLevelConfiguration in the cluster."),
                TableColumn("MatchingPrecedence", type="string", description="matchingPrecedence is used to choose "
                                                                             "among the FlowSchemas that match a "
                                                                             "given request."),
                TableColumn("DistinguisherMethod", description="distinguisherMethod defines how to compute the flow "
                                                               "distinguisher for requests that match this schema."),
                AGE_COLUMN,
                TableColumn("MissingPL", description="indicates if the referenced priority level is missing")]

    def row(self, obj: Object) -> list[Any]:
        """``printFlowSchema``: MISSINGPL is the Dangling condition's status, ``?`` without one."""
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        method = (spec.get("distinguisherMethod") or {}).get("type") or "<none>"
        missing = next((c.get("status") or "" for c in (obj.get("status") or {}).get("conditions") or []
                        if c.get("type") == "Dangling"), "?")
        return [metadata.get("name", ""), (spec.get("priorityLevelConfiguration") or {}).get("name") or "",
                int(spec.get("matchingPrecedence") or 0), method, since(metadata.get("creationTimestamp")), missing]


def validate_flow_schema_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    precedence = spec.get("matchingPrecedence") or 0
    if not 0 < precedence <= MAX_MATCHING_PRECEDENCE:
        causes.append(invalid(f"{path}.matchingPrecedence", precedence,
                              inclusive_range_error(1, MAX_MATCHING_PRECEDENCE)))
    method = spec.get("distinguisherMethod")
    if method is not None and method.get("type") not in DISTINGUISHER_METHODS:
        causes.append(not_supported(f"{path}.distinguisherMethod.type", method.get("type") or "",
                                    DISTINGUISHER_METHODS))
    if not (spec.get("priorityLevelConfiguration") or {}).get("name"):
        causes.append(required(f"{path}.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in enumerate(spec.get("rules") or []):
        causes.extend(_validate_rule(rule, f"{path}.rules[{i}]"))
    return causes


def _validate_rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    subjects = rule.get("subjects") or []
    if not subjects:
        causes.append(required(f"{path}.subjects", "subjects must contain at least one value"))
    for i, subject in enumerate(subjects):
        kind = subject.get("kind") or ""
        if kind not in SUBJECT_KINDS:
            causes.append(not_supported(f"{path}.subjects[{i}].kind", kind, SUBJECT_KINDS))
            continue
        member = subject.get(SUBJECT_FIELDS[kind]) or {}
        if not member.get("name"):
            causes.append(required(f"{path}.subjects[{i}].{SUBJECT_FIELDS[kind]}.name"))
    if not rule.get("resourceRules") and not rule.get("nonResourceRules"):
        causes.append(required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, resource_rule in enumerate(rule.get("resourceRules") or []):
        for field in ("verbs", "apiGroups", "resources"):
            if not resource_rule.get(field):
                causes.append(required(f"{path}.resourceRules[{i}].{field}", f"{field} must contain at least one "
                                                                             "value"))
    for i, url_rule in enumerate(rule.get("nonResourceRules") or []):
        for field in ("verbs", "nonResourceURLs"):
            if not url_rule.get(field):
                causes.append(required(f"{path}.nonResourceRules[{i}].{field}", f"{field} must contain at least "
                                                                                "one value"))
    return causes
