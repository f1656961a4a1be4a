"""ReplicationControllers, ReplicaSets and Deployments: defaults, selector/template rules, status, scale, tables."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from apimachinery.errors import Cause, invalid
from apiserver.registry.deployments import DeploymentStrategy
from apiserver.registry.replicasets import ReplicaSetStrategy
from apiserver.registry.replicationcontrollers import ReplicationControllerStrategy

RC = ReplicationControllerStrategy()
RS = ReplicaSetStrategy()
DEPLOY = DeploymentStrategy()
TEMPLATE_DEFAULTS = {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                     "terminationGracePeriodSeconds": 30, "securityContext": {}}


def created_at() -> str:
    return (datetime.now(UTC) - timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


def template(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}
    body.update(spec)
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}}, "spec": body}


def make(kind: str, name: str = "web", **spec: Any) -> dict[str, Any]:
    group = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": group, "kind": kind,
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created_at()}, "spec": spec}


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


# --- ReplicationControllers -------------------------------------------------------------------------------------


def test_rc_selector_and_labels_default_from_the_template() -> None:
    rc = make("ReplicationController", template=template({"app": "web", "tier": "front"}))
    RC.prepare_for_create(rc)
    assert rc["spec"]["selector"] == {"app": "web", "tier": "front"}
    assert rc["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert rc["spec"]["replicas"] == 1
    assert rc["status"] == {"replicas": 0}
    pod_template = rc["spec"]["template"]
    assert pod_template["metadata"]["creationTimestamp"] is None
    assert {k: pod_template["spec"][k] for k in TEMPLATE_DEFAULTS} == TEMPLATE_DEFAULTS
    assert pod_template["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "enableServiceLinks" not in pod_template["spec"]  # a Pod-only default
    assert RC.validate(rc) == []


def test_rc_validation() -> None:
    rc = make("ReplicationController", replicas=-1, selector={"app": "other"},
              template=template(restartPolicy="OnFailure", activeDeadlineSeconds=10))
    RC.prepare_for_create(rc)
    assert invalid("ReplicationController", "web", RC.validate(rc)).message == (
        'ReplicationController "web" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to '
        '0, spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match '
        'template `labels`, spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: '
        '"Always", spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in '
        "ReplicationController is not Supported]")


def test_rc_template_is_required() -> None:
    rc = make("ReplicationController", selector={"app": "web"})
    RC.prepare_for_create(rc)
    assert errors(RC.validate(rc)) == ["spec.template: Required value"]


def test_rc_template_pod_spec_is_validated() -> None:
    rc = make("ReplicationController", template=template(containers=[]))
    RC.prepare_for_create(rc)
    assert errors(RC.validate(rc)) == ["spec.template.spec.containers: Required value"]


def test_rc_scale_and_table() -> None:
    rc = make("ReplicationController", replicas=3, template=template({"app": "web", "tier": "front"}))
    RC.prepare_for_create(rc)
    rc["metadata"].update(uid="u-1", resourceVersion="42")
    rc["status"] = {"replicas": 2, "readyReplicas": 1}
    assert RC.scale_of(rc) == {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "42",
                     "creationTimestamp": rc["metadata"]["creationTimestamp"]},
        "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web,tier=front"}}
    RC.apply_scale(rc, 5)
    assert rc["spec"]["replicas"] == 5
    assert [c.name for c in RC.columns()] == ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images",
                                              "Selector"]
    assert RC.row(rc) == ["web", 5, 2, 1, "10d", "nginx", "nginx:1.25", "app=web,tier=front"]
    assert RC.selectable_fields(rc)["status.replicas"] == "2"


def test_rc_status_counts_are_nested() -> None:
    rc = make("ReplicationController", template=template())
    new = copy.deepcopy(rc)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}
    assert errors(RC.validate_status_update(new, rc)) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
    ]


def test_scale_body_is_validated() -> None:
    assert errors(RC.validate_scale({"spec": {"replicas": -2}})) == [
        "spec.replicas: Invalid value: -2: must be greater than or equal to 0"]


def test_zero_replicas_scale_omits_spec_replicas() -> None:
    rc = make("ReplicationController", replicas=0, template=template())
    RC.prepare_for_create(rc)
    assert RC.scale_of(rc)["spec"] == {}


# --- ReplicaSets -------------------------------------------------------------------------------------------------


def test_rs_defaults_and_valid() -> None:
    rs = make("ReplicaSet", selector={"matchLabels": {"app": "web"}}, template=template())
    RS.prepare_for_create(rs)
    assert rs["spec"]["replicas"] == 1 and rs["status"] == {"replicas": 0}
    assert RS.validate(rs) == []


def test_rs_selector_required_and_must_match() -> None:
    rs = make("ReplicaSet", template=template())
    RS.prepare_for_create(rs)
    assert errors(RS.validate(rs)) == [
        "spec.selector: Required value",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match '
        "template `labels`",
    ]
    rs["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}
    assert errors(RS.validate(rs))[-1].endswith("`selector` does not match template `labels`")


def test_rs_empty_selector_is_invalid() -> None:
    rs = make("ReplicaSet", selector={}, template=template())
    RS.prepare_for_create(rs)
    assert errors(RS.validate(rs)) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]


def test_rs_selector_is_immutable() -> None:
    old = make("ReplicaSet", selector={"matchLabels": {"app": "web"}}, template=template())
    RS.prepare_for_create(old)
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "2"}}
    new["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    RS.prepare_for_update(new, old)
    assert errors(RS.validate_update(new, old)) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "v":"2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


def test_rs_scale_update_bumps_generation_and_keeps_status() -> None:
    old = make("ReplicaSet", selector={"matchLabels": {"app": "web"}}, template=template())
    RS.prepare_for_create(old)
    old["status"] = {"replicas": 1}
    new = copy.deepcopy(old)
    RS.apply_scale(new, 4)
    new["status"] = {"replicas": 9}
    RS.prepare_for_update(new, old)
    assert RS.spec_changed(new, old) and new["status"] == {"replicas": 1}
    assert RS.scale_of(new)["status"] == {"replicas": 1, "selector": "app=web"}


def test_rs_table() -> None:
    rs = make("ReplicaSet", replicas=3, selector={"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front", "edge"]}]}, template=template({"app": "web"}))
    rs["status"] = {"replicas": 3, "readyReplicas": 2}
    assert RS.row(rs) == ["web", 3, 3, 2, "10d", "nginx", "nginx:1.25", "app=web,tier in (edge,front)"]
    assert [c.type for c in RS.columns()][1:4] == ["integer", "integer", "integer"]


# --- Deployments -------------------------------------------------------------------------------------------------


def deployment(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": template()}
    body.update(spec)
    obj = make("Deployment", **body)
    DEPLOY.prepare_for_create(obj)
    return obj


def test_deployment_defaults() -> None:
    obj = deployment()
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert obj["status"] == {}
    assert DEPLOY.validate(obj) == []


def test_recreate_strategy_gets_no_rolling_update() -> None:
    obj = deployment(strategy={"type": "Recreate"})
    assert obj["spec"]["strategy"] == {"type": "Recreate"}
    assert DEPLOY.validate(obj) == []


def test_deployment_strategy_rules() -> None:
    zero = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}})
    assert errors(DEPLOY.validate(zero)) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: "
        "may not be 0 when `maxSurge` is 0"]
    bad = deployment(strategy={"type": "RollingUpdate",
                               "rollingUpdate": {"maxSurge": "lots", "maxUnavailable": "150%"}})
    assert errors(DEPLOY.validate(bad)) == [
        'spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"lots"}: a '
        "valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used "
        "for validation is '[0-9]+%')",
        'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
        'StrVal:"150%"}: must not be greater than 100%',
    ]
    blue_green = deployment(strategy={"type": "BlueGreen"})
    assert errors(DEPLOY.validate(blue_green))[0].startswith(
        'spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"BlueGreen"')


def test_progress_deadline_must_exceed_min_ready() -> None:
    obj = deployment(minReadySeconds=700)
    assert errors(DEPLOY.validate(obj)) == [
        "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]


def test_deployment_without_selector_reads_like_kubectl() -> None:
    obj = make("Deployment", template=template({"app": "nginx"}))
    DEPLOY.prepare_for_create(obj)
    assert invalid("Deployment", "web", DEPLOY.validate(obj), group="apps").message == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid '
        'value: map[string]string{"app":"nginx"}: `selector` does not match template `labels`]')


def test_deployment_generation_follows_spec_and_annotations() -> None:
    old = deployment()
    image_change = copy.deepcopy(old)
    image_change["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    DEPLOY.prepare_for_update(image_change, old)
    assert DEPLOY.spec_changed(image_change, old)
    annotated = copy.deepcopy(old)
    annotated["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2"}
    DEPLOY.prepare_for_update(annotated, old)
    assert DEPLOY.spec_changed(annotated, old)
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"] = {"team": "a"}
    DEPLOY.prepare_for_update(labelled, old)
    assert not DEPLOY.spec_changed(labelled, old)


def test_deployment_selector_is_immutable() -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web2"}}
    new["spec"]["template"]["metadata"]["labels"] = {"app": "web2"}
    assert errors(DEPLOY.validate_update(new, old))[-1].endswith("field is immutable")


def test_deployment_status_rules() -> None:
    old = deployment()
    old["status"] = {"collisionCount": 2}
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "updatedReplicas": 2, "collisionCount": 1}
    assert errors(DEPLOY.validate_status_update(new, old)) == [
        "status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.collisionCount: Invalid value: 1: cannot be decremented",
    ]


def test_deployment_table_and_scale() -> None:
    obj = deployment(replicas=3)
    obj["status"] = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    assert [(c.name, c.priority) for c in DEPLOY.columns()] == [
        ("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0), ("Containers", 1),
        ("Images", 1), ("Selector", 1)]
    assert DEPLOY.row(obj) == ["web", "2/3", 3, 2, "10d", "nginx", "nginx:1.25", "app=web"]
    assert DEPLOY.scale_of(obj)["status"] == {"replicas": 3, "selector": "app=web"}
