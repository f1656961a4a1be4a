"""Validation of the PodSpec fields the scheduler reads: tolerations, affinity, topology spread constraints.

Kept apart from ``podspec`` because pod updates re-check tolerations on their own (only additions are allowed)
and because these rules mirror the scheduler's vocabulary rather than the kubelet's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    duplicate,
    forbidden,
    invalid,
    is_valid_label_value,
    name_is_dns_subdomain,
    not_supported,
    required,
    validate_label_name,
    validate_label_selector,
    validate_namespace_name,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_taint_effect(effect: str, allow_empty: bool, path: str) -> list[Cause]:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path, effect, TAINT_EFFECTS)]
    return []


def validate_tolerations(tolerations: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    """``ValidateTolerations``: key, operator/value pairing, effect, and tolerationSeconds only for NoExecute."""
    causes: list[Cause] = []
    for i, toleration in enumerate(tolerations or []):
        item = f"{path}[{i}]"
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or ""
        value = toleration.get("value") or ""
        effect = toleration.get("effect") or ""
        if key:
            causes.extend(validate_label_name(key, f"{item}.key"))
        if not key and operator != "Exists":
            causes.append(invalid(f"{item}.operator", operator,
                                  'operator must be Exists when `key` is empty, which means "match all values and '
                                  'all keys"'))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(invalid(f"{item}.effect", effect,
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            errs = is_valid_label_value(value)
            if errs:
                causes.append(invalid(f"{item}.operator", value, ";".join(errs)))
        elif operator == "Exists":
            if value:
                causes.append(invalid(f"{item}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            causes.append(not_supported(f"{item}.operator", operator, ("Equal", "Exists")))
        if effect:
            causes.extend(validate_taint_effect(effect, True, f"{item}.effect"))
    return causes


def validate_only_added_tolerations(new: list[Mapping[str, Any]] | None, old: list[Mapping[str, Any]] | None,
                                    path: str) -> list[Cause]:
    """Pod updates may add tolerations and change ``tolerationSeconds``, nothing else."""
    new = new or []
    for existing in old or []:
        if not any(_same_toleration(existing, candidate) for candidate in new):
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("key", "operator", "value", "effect")
    return all((a.get(k) or "") == (b.get(k) or "") for k in keys)


# --- node selection ---------------------------------------------------------------------------------------


def validate_node_selector_requirement(req: Mapping[str, Any], path: str, check_values: bool) -> list[Cause]:
    causes: list[Cause] = []
    operator = req.get("operator", "")
    values = req.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(forbidden(f"{path}.values",
                                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            causes.append(required(f"{path}.values",
                                   "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        causes.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    causes.extend(validate_label_name(req.get("key", ""), f"{path}.key"))
    if check_values:
        for i, value in enumerate(values):
            causes.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in is_valid_label_value(str(value)))
    return causes


def validate_node_field_selector_requirement(req: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    operator = req.get("operator", "")
    values = req.get("values") or []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            causes.append(required(f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' "
                                                     "for node field selector"))
    else:
        causes.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    if req.get("key") != "metadata.name":
        causes.append(invalid(f"{path}.key", req.get("key", ""), "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            causes.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in name_is_dns_subdomain(value, False))
    return causes


def validate_node_selector_term(term: Mapping[str, Any], path: str, check_values: bool) -> list[Cause]:
    causes: list[Cause] = []
    for j, req in enumerate(term.get("matchExpressions") or []):
        causes.extend(validate_node_selector_requirement(req, f"{path}.matchExpressions[{j}]", check_values))
    for j, req in enumerate(term.get("matchFields") or []):
        causes.extend(validate_node_field_selector_requirement(req, f"{path}.matchFields[{j}]"))
    return causes


def _validate_node_affinity(affinity: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    required_selector = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required_selector is not None:
        terms_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = required_selector.get("nodeSelectorTerms") or []
        if not terms:
            causes.append(required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            causes.extend(validate_node_selector_term(term, f"{terms_path}[{i}]", True))
    for i, term in enumerate(affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        item = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        causes.extend(_validate_weight(term.get("weight"), f"{item}.weight"))
        causes.extend(validate_node_selector_term(term.get("preference") or {}, f"{item}.preference", False))
    return causes


def _validate_weight(weight: Any, path: str) -> list[Cause]:
    weight = weight or 0
    return [] if 0 < weight <= 100 else [invalid(path, weight, "must be in the range 1-100")]


def _validate_pod_affinity_term(term: Mapping[str, Any], path: str) -> list[Cause]:
    causes = validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    causes.extend(validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector"))
    for name in term.get("namespaces") or []:
        causes.extend(invalid(f"{path}.namespace", name, msg) for msg in validate_namespace_name(name, False))
    topology_key = term.get("topologyKey") or ""
    if not topology_key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    causes.extend(validate_label_name(topology_key, f"{path}.topologyKey"))
    return causes


def _validate_pod_affinity(affinity: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, term in enumerate(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
        causes.extend(_validate_pod_affinity_term(term, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"))
    for i, weighted in enumerate(affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        item = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        causes.extend(_validate_weight(weighted.get("weight"), f"{item}.weight"))
        causes.extend(_validate_pod_affinity_term(weighted.get("podAffinityTerm") or {}, f"{item}.podAffinityTerm"))
    return causes


def validate_affinity(affinity: Mapping[str, Any] | None, path: str) -> list[Cause]:
    if not affinity:
        return []
    causes: list[Cause] = []
    if affinity.get("nodeAffinity") is not None:
        causes.extend(_validate_node_affinity(affinity["nodeAffinity"], f"{path}.nodeAffinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind) is not None:
            causes.extend(_validate_pod_affinity(affinity[kind], f"{path}.{kind}"))
    return causes


# --- topology spread --------------------------------------------------------------------------------------

_UNSATISFIABLE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Ignore", "Honor")


def validate_topology_spread_constraints(constraints: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, constraint in enumerate(constraints or []):
        item = f"{path}[{i}]"
        max_skew = constraint.get("maxSkew") or 0
        if max_skew <= 0:
            causes.append(invalid(f"{item}.maxSkew", max_skew, "must be greater than zero"))
        topology_key = constraint.get("topologyKey") or ""
        if not topology_key:
            causes.append(required(f"{item}.topologyKey", "can not be empty"))
        else:
            causes.extend(validate_label_name(topology_key, f"{item}.topologyKey"))
        action = constraint.get("whenUnsatisfiable") or ""
        if action not in _UNSATISFIABLE_ACTIONS:
            causes.append(not_supported(f"{item}.whenUnsatisfiable", action, _UNSATISFIABLE_ACTIONS))
        pair = (topology_key, action)
        if pair in seen:
            causes.append(duplicate(f"{item}.{{topologyKey, whenUnsatisfiable}}", f"{{{topology_key}, {action}}}"))
        seen.add(pair)
        min_domains = constraint.get("minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                causes.append(invalid(f"{item}.minDomains", min_domains, "must be greater than 0"))
            elif action != "DoNotSchedule":
                causes.append(invalid(f"{item}.minDomains", min_domains,
                                      "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
                                      f"{action}"))
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(key)
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                causes.append(not_supported(f"{item}.{key}", policy, _NODE_INCLUSION_POLICIES))
        causes.extend(validate_label_selector(constraint.get("labelSelector"), f"{item}.labelSelector"))
    return causes
