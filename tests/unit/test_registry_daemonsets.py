"""DaemonSets (defaults, the template generation annotation, ValidateDaemonSet's causes, status, the table) and
ControllerRevisions (data required and immutable, NAME CONTROLLER REVISION AGE)."""

from __future__ import annotations

import copy
from typing import Any

from apimachinery.errors import Cause
from apiserver.registry.daemonsets import TEMPLATE_GENERATION_ANNOTATION, DaemonSetStrategy

DS = DaemonSetStrategy()


def daemonset(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "agent"}},
                            "template": {"metadata": {"labels": {"app": "agent"}},
                                         "spec": {"containers": [{"name": "agent", "image": "busybox"}]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": body}


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_defaults_and_template_generation() -> None:
    ds = daemonset()
    ds["metadata"]["annotations"] = {TEMPLATE_GENERATION_ANNOTATION: "7"}  # the client's value is not kept
    DS.prepare_for_create(ds)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10
    assert ds["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert ds["metadata"]["annotations"] == {TEMPLATE_GENERATION_ANNOTATION: "1"}
    assert ds["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                            "numberReady": 0}
    assert DS.validate(ds) == []
    on_delete = daemonset(updateStrategy={"type": "OnDelete"})
    DS.prepare_for_create(on_delete)
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}

    changed = copy.deepcopy(ds)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx"
    DS.prepare_for_update(changed, ds)
    assert changed["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION] == "2"
    assert DS.spec_changed(changed, ds)
    same = copy.deepcopy(changed)
    same["spec"]["minReadySeconds"] = 5
    DS.prepare_for_update(same, changed)
    assert same["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION] == "2"


def test_selector_and_template_rules() -> None:
    ds = daemonset(selector={"matchLabels": {"app": "other"}})
    ds["spec"]["template"]["spec"].update(restartPolicy="OnFailure", activeDeadlineSeconds=5)
    DS.default(ds)
    assert errors(DS.validate(ds)) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"agent"}: '
        '`selector` does not match template `labels`',
        'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Invalid value: 5: activeDeadlineSeconds must be nil for daemonset",
    ]
    empty = daemonset(selector={})
    DS.default(empty)
    assert "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:" \
           "[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset" in errors(DS.validate(empty))
    old = daemonset()
    DS.prepare_for_create(old)
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "agent", "x": "y"}}
    new["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    assert [c.field for c in DS.validate_update(new, old)] == ["spec.selector"]


def test_update_strategy_rules() -> None:
    def check(strategy: dict[str, Any]) -> list[str]:
        ds = daemonset(updateStrategy=strategy)
        DS.default(ds)
        return errors(DS.validate(ds))

    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}) == []
    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}) == []
    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}) == [
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]
    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}) == [
        'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: '
        "may not be set when maxUnavailable is non-zero"]
    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}}) == [
        'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
        'StrVal:"120%"}: must not be greater than 100%']
    assert check({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": -1}}) == [
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
    assert check({"type": "Sometimes"}) == [
        'spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
        'RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"']


def test_status_and_table() -> None:
    ds = daemonset()
    DS.prepare_for_create(ds)
    new = copy.deepcopy(ds)
    new["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": -1}
    assert [c.field for c in DS.validate_status_update(new, ds)] == ["status.numberReady"]
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd", "arch": "amd64"}
    ds["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                    "updatedNumberScheduled": 3, "numberAvailable": 2}
    assert [c.name for c in DS.columns()] == ["Name", "Desired", "Current", "Ready", "Up-to-date", "Available",
                                              "Node Selector", "Age", "Containers", "Images", "Selector"]
    row = DS.row(ds)
    assert row[:7] == ["agent", 3, 3, 2, 3, 2, "arch=amd64,disk=ssd"]
    assert row[8:] == ["agent", "busybox", "app=agent"]


def test_controller_revisions() -> None:
    from apiserver.registry.controllerrevisions import ControllerRevisionStrategy

    cr = ControllerRevisionStrategy()
    revision = {"metadata": {"name": "agent-1", "creationTimestamp": "2026-01-01T00:00:00Z", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": True}]},
        "data": {"spec": {}}, "revision": 2}
    assert cr.validate(revision) == []
    assert errors(cr.validate({"metadata": {}, "revision": -1})) == [
        "data: Required value: data is mandatory", "revision: Invalid value: -1: must be greater than or equal to 0"]
    changed = {**revision, "data": {"spec": {"x": 1}}, "revision": 3}
    assert [c.field for c in cr.validate_update(changed, revision)] == ["data"]
    assert cr.validate_update({**revision, "revision": 3}, revision) == []
    assert [c.name for c in cr.columns()] == ["Name", "Controller", "Revision", "Age"]
    assert cr.row(revision)[:3] == ["agent-1", "daemonset.apps/agent", 2]
    assert cr.row({"metadata": {"name": "x"}})[1] == "<none>"
