"""``--config FILE``: a KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``), the parts kubelab uses.

Read: ``percentageOfNodesToScore`` (0: kube-scheduler's adaptive default), ``leaderElection`` (``leaderElect``,
``leaseDuration``/``renewDeadline``/``retryPeriod``, ``resourceName``/``resourceNamespace``) and ``profiles[]``
with ``schedulerName``, ``percentageOfNodesToScore`` and ``plugins.{filter,score,postFilter,multiPoint}.{enabled,
disabled}`` (``postFilter``: DefaultPreemption; disabled, an unschedulable pod never preempts).

Plugin sets merge with the defaults as kube-scheduler's ``mergePluginSet`` does: defaults stay in their order
unless disabled (``*`` disables them all); an enabled default is reconfigured in place (e.g. a new weight);
other enabled plugins follow. A score weight of 0 or none means 1. ``multiPoint`` enables a plugin at every
extension point it implements. Anything invalid raises ``ConfigError`` with a message naming the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .plugins import DEFAULT_FILTERS, DEFAULT_POST_FILTERS, DEFAULT_SCORES, REGISTRY

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Profile:
    scheduler_name: str = "default-scheduler"
    filters: tuple[str, ...] = DEFAULT_FILTERS
    scores: tuple[tuple[str, int], ...] = tuple(DEFAULT_SCORES.items())
    percentage_of_nodes_to_score: int = 0  # 0: adaptive
    post_filters: tuple[str, ...] = DEFAULT_POST_FILTERS


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class Configuration:
    profiles: tuple[Profile, ...] = (Profile(),)
    percentage_of_nodes_to_score: int = 0
    leader_election: LeaderElection = field(default_factory=LeaderElection)


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")


def parse_duration(value: Any, where: str) -> float:
    """A Go duration (``15s``, ``1m30s``, ``500ms``) in seconds."""
    text = str(value).strip()
    match = _DURATION.match(text)
    if not text or match is None or not any(match.groups()):
        raise ConfigError(f"{where}: invalid duration {value!r} (e.g. 15s, 1m30s, 500ms)")
    h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s + ms / 1000


def _percentage(value: Any, where: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise ConfigError(f"{where}: must be an integer between 0 and 100, got {value!r}")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping")
    return value


def _plugin_list(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in value):
        raise ConfigError(f"{where}: must be a list of {{name: ...}}")
    for i, p in enumerate(value):
        if p["name"] != "*" and p["name"] not in REGISTRY:
            raise ConfigError(f"{where}[{i}].name: unknown plugin {p['name']!r} (known: {', '.join(sorted(REGISTRY))})")
    return value


POINT_METHODS = {"filter": "filter", "score": "score", "postFilter": "post_filter"}  # extension point → method


def _implements(name: str, point: str) -> bool:
    return hasattr(REGISTRY[name], POINT_METHODS[point])


def _merge(defaults: list[tuple[str, int]], section: dict[str, Any], multi: dict[str, Any], point: str,
           where: str) -> list[tuple[str, int]]:
    enabled = [p for p in _plugin_list(multi.get("enabled"), f"{where}.multiPoint.enabled")
               if _implements(p["name"], point)] + _plugin_list(section.get("enabled"), f"{where}.{point}.enabled")
    disabled = {p["name"] for p in _plugin_list(section.get("disabled"), f"{where}.{point}.disabled")} | \
        {p["name"] for p in _plugin_list(multi.get("disabled"), f"{where}.multiPoint.disabled")}
    custom: dict[str, int] = {}
    for i, p in enumerate(enabled):
        if p["name"] == "*":
            raise ConfigError(f"{where}.{point}.enabled[{i}]: '*' may only be disabled")
        if not _implements(p["name"], point):
            raise ConfigError(f"{where}.{point}.enabled[{i}]: plugin {p['name']!r} is not a {point} plugin")
        weight = p.get("weight") or 1
        if not isinstance(weight, int) or weight < 0:
            raise ConfigError(f"{where}.{point}.enabled[{i}].weight: must be a positive integer, got {weight!r}")
        custom[p["name"]] = weight
    merged: list[tuple[str, int]] = []
    for name, weight in defaults:
        if "*" in disabled or name in disabled:
            continue
        merged.append((name, custom.pop(name, weight)))
    merged += [(name, weight) for name, weight in custom.items() if name not in dict(merged)]
    return merged


def _profile(raw: Any, i: int, default_percentage: int) -> Profile:
    where = f"profiles[{i}]"
    raw = _mapping(raw, where)
    name = raw.get("schedulerName", "default-scheduler")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.schedulerName: must be a non-empty string")
    plugins = _mapping(raw.get("plugins"), f"{where}.plugins")
    multi = _mapping(plugins.get("multiPoint"), f"{where}.plugins.multiPoint")
    filters = _merge([(n, 1) for n in DEFAULT_FILTERS], _mapping(plugins.get("filter"), f"{where}.plugins.filter"),
                     multi, "filter", f"{where}.plugins")
    scores = _merge(list(DEFAULT_SCORES.items()), _mapping(plugins.get("score"), f"{where}.plugins.score"),
                    multi, "score", f"{where}.plugins")
    post_filters = _merge([(n, 1) for n in DEFAULT_POST_FILTERS],
                          _mapping(plugins.get("postFilter"), f"{where}.plugins.postFilter"), multi, "postFilter",
                          f"{where}.plugins")
    percentage = raw.get("percentageOfNodesToScore")
    return Profile(name, tuple(n for n, _ in filters), tuple(scores),
                   _percentage(percentage, f"{where}.percentageOfNodesToScore") if percentage is not None
                   else default_percentage, tuple(n for n, _ in post_filters))


def parse_config(doc: Any) -> Configuration:
    """A KubeSchedulerConfiguration document (already YAML-decoded) → Configuration."""
    doc = _mapping(doc, "configuration")
    if doc.get("apiVersion") != API_VERSION:
        raise ConfigError(f"apiVersion: must be {API_VERSION!r}, got {doc.get('apiVersion')!r}")
    if doc.get("kind") != KIND:
        raise ConfigError(f"kind: must be {KIND!r}, got {doc.get('kind')!r}")
    percentage = _percentage(doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    le = _mapping(doc.get("leaderElection"), "leaderElection")
    leader_elect = le.get("leaderElect", True)
    if not isinstance(leader_elect, bool):
        raise ConfigError(f"leaderElection.leaderElect: must be true or false, got {leader_elect!r}")
    defaults = LeaderElection()
    election = LeaderElection(
        leader_elect,
        parse_duration(le["leaseDuration"], "leaderElection.leaseDuration") if "leaseDuration" in le
        else defaults.lease_duration,
        parse_duration(le["renewDeadline"], "leaderElection.renewDeadline") if "renewDeadline" in le
        else defaults.renew_deadline,
        parse_duration(le["retryPeriod"], "leaderElection.retryPeriod") if "retryPeriod" in le
        else defaults.retry_period,
        str(le.get("resourceName") or defaults.resource_name),
        str(le.get("resourceNamespace") or defaults.resource_namespace))
    if election.lease_duration <= election.renew_deadline:
        raise ConfigError("leaderElection: leaseDuration must be greater than renewDeadline")
    raw_profiles = doc.get("profiles")
    if raw_profiles is not None and not isinstance(raw_profiles, list):
        raise ConfigError("profiles: must be a list")
    profiles = tuple(_profile(p, i, percentage) for i, p in enumerate(raw_profiles or [{}]))
    names = [p.scheduler_name for p in profiles]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"profiles: duplicate schedulerName {name!r}")
    return Configuration(profiles, percentage, election)


def load_config(path: str | Path) -> Configuration:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror}") from err
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from err
    return parse_config(doc)
