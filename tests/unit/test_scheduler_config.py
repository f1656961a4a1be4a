"""KubeSchedulerConfiguration parsing: merging plugin sets with the defaults, weights, and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.__main__ import configuration, parse_args
from scheduler.config import ConfigError, load_config, parse_config, parse_duration
from scheduler.plugins import DEFAULT_FILTERS, DEFAULT_SCORES

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def cfg(**doc: Any) -> Any:
    return parse_config({**HEAD, **doc})


def test_defaults() -> None:
    config = cfg()
    (profile,) = config.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.filters == DEFAULT_FILTERS and dict(profile.scores) == DEFAULT_SCORES
    assert config.leader_election.leader_elect and config.leader_election.resource_name == "kube-scheduler"
    assert profile.percentage_of_nodes_to_score == 0
    assert profile.post_filters == ("DefaultPreemption",)


def test_disable_enable_and_reweigh_in_place() -> None:
    config = cfg(percentageOfNodesToScore=40, profiles=[{
        "schedulerName": "custom",
        "plugins": {"filter": {"disabled": [{"name": "NodePorts"}]},
                    "score": {"disabled": [{"name": "ImageLocality"}],
                              "enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 5},
                                          {"name": "ImageLocality", "weight": 0}]}}}])
    (profile,) = config.profiles
    assert profile.scheduler_name == "custom" and profile.percentage_of_nodes_to_score == 40
    assert "NodePorts" not in profile.filters
    scores = list(profile.scores)
    assert scores[-2:] == [("NodeResourcesBalancedAllocation", 5), ("ImageLocality", 1)]  # weight 0 means 1
    assert [n for n, _ in scores[:-2]] == [n for n in DEFAULT_SCORES if n not in
                                            ("ImageLocality", "NodeResourcesBalancedAllocation")]


def test_disable_all_and_multipoint() -> None:
    config = cfg(profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "*"}],
                                                        "enabled": [{"name": "NodeResourcesFit", "weight": 2},
                                                                    {"name": "NodeName"}]}}}])
    (profile,) = config.profiles
    assert profile.filters == ("NodeResourcesFit", "NodeName")
    assert profile.scores == (("NodeResourcesFit", 2),)
    assert profile.post_filters == ()  # '*' in multiPoint disables DefaultPreemption too


def test_post_filter_disable_and_enable(tmp_path: Path) -> None:
    disabled = {"plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}
    (profile,) = cfg(profiles=[disabled]).profiles
    assert profile.post_filters == () and profile.filters == DEFAULT_FILTERS
    (profile,) = cfg(profiles=[{"plugins": {"postFilter": {"disabled": [{"name": "*"}],
                                                           "enabled": [{"name": "DefaultPreemption"}]}}}]).profiles
    assert profile.post_filters == ("DefaultPreemption",)
    (profile,) = cfg(profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}}}]).profiles
    assert profile.post_filters == ()
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                    "- plugins:\n    postFilter:\n      disabled: [{name: DefaultPreemption}]\n")
    (profile,) = configuration(parse_args(["--config", str(path), "--scheduler-name", "mine"])).profiles
    assert profile.scheduler_name == "mine" and profile.post_filters == ()  # the flag keeps the rest


def test_leader_election_and_durations() -> None:
    config = cfg(leaderElection={"leaderElect": False, "leaseDuration": "1m30s", "renewDeadline": "1m",
                                 "resourceName": "x"})
    assert not config.leader_election.leader_elect and config.leader_election.lease_duration == 90
    assert config.leader_election.resource_name == "x"
    assert parse_duration("1m30s", "d") == 90 and parse_duration("500ms", "d") == 0.5
    with pytest.raises(ConfigError, match="leaseDuration must be greater"):
        cfg(leaderElection={"leaseDuration": "5s", "renewDeadline": "10s"})


@pytest.mark.parametrize("doc,message", [
    ({"apiVersion": "v1"}, "apiVersion"),
    ({"kind": "Nope"}, "kind"),
    ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore: must be an integer between 0 and 100"),
    ({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Bogus"}]}}}]},
     r"profiles\[0\].plugins.filter.enabled\[0\].name: unknown plugin 'Bogus'"),
    ({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}}]}, "is not a filter plugin"),
    ({"profiles": [{"plugins": {"postFilter": {"enabled": [{"name": "NodeName"}]}}}]},
     r"profiles\[0\].plugins.postFilter.enabled\[0\]: plugin 'NodeName' is not a postFilter plugin"),
    ({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "DefaultPreemption"}]}}}]}, "is not a filter plugin"),
    ({"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": -1}]}}}]}, "weight"),
    ({"profiles": [{}, {}]}, "duplicate schedulerName 'default-scheduler'"),
    ({"leaderElection": {"leaseDuration": "soon"}}, "invalid duration"),
])
def test_invalid(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({**HEAD, **doc})


def test_file_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "leaderElection:\n  leaderElect: true\nprofiles:\n- schedulerName: mine\n")
    assert load_config(path).profiles[0].scheduler_name == "mine"
    config = configuration(parse_args(["--config", str(path), "--leader-elect=false",
                                       "--leader-elect-lease-duration=4s"]))
    assert not config.leader_election.leader_elect and config.leader_election.lease_duration == 4
    path.write_text(": not yaml: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
