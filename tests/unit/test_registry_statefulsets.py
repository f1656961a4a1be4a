"""StatefulSets: SetDefaults_StatefulSet, ValidateStatefulSetSpec's and ValidateStatefulSetUpdate's causes, the
status rules and the NAME READY AGE table."""

from __future__ import annotations

import copy
from typing import Any

from apimachinery.errors import Cause
from apiserver.registry.statefulsets import StatefulSetStrategy

STS = StatefulSetStrategy()


def statefulset(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "nginx",
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": body}


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def created(**spec: Any) -> dict[str, Any]:
    sts = statefulset(**spec)
    STS.prepare_for_create(sts)
    return sts


def test_defaults() -> None:
    claim = {"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                   "resources": {"requests": {"storage": "1Gi"}}}}
    sts = created(volumeClaimTemplates=[claim])
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["volumeClaimTemplates"] == [{
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "www", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"}}]
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
    assert STS.validate(sts) == []
    # an explicit RollingUpdate without rollingUpdate stays so; maxUnavailable is behind an alpha gate in 1.32
    assert created(updateStrategy={"type": "RollingUpdate"})["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    gated = created(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    assert gated["spec"]["updateStrategy"]["rollingUpdate"] == {"partition": 0}


def test_validation_messages() -> None:
    sts = created(podManagementPolicy="Sometimes", replicas=-1, ordinals={"start": -2},
                  updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}},
                  persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep", "whenScaled": "Delete"})
    sts["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    sts["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert errors(STS.validate(sts)) == [
        "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
        "spec.updateStrategy.rollingUpdate: Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:1, "
        "MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy 'RollingUpdate'",
        'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: '
        '"Retain", "Delete"',
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
    ]
    partition = created(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}})
    assert errors(STS.validate(partition)) == [
        "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"]
    unmatched = created()
    unmatched["spec"]["template"]["metadata"]["labels"] = {"app": "db"}
    assert errors(STS.validate(unmatched)) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"db"}: '
        "`selector` does not match template `labels`"]
    assert STS.name_validator("web.example") != []  # a DNS label: it prefixes the pods' hostnames


def test_update_allows_only_kubes_mutable_fields() -> None:
    old = created()
    old["metadata"]["generation"] = 1
    scaled = copy.deepcopy(old)
    scaled["spec"].update(replicas=5, minReadySeconds=3, ordinals={"start": 1})
    scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    STS.prepare_for_update(scaled, old)
    assert STS.validate_update(scaled, old) == []
    renamed = copy.deepcopy(old)
    renamed["spec"]["serviceName"] = "other"
    STS.prepare_for_update(renamed, old)
    assert errors(STS.validate_update(renamed, old)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]


def test_status_rules_and_table() -> None:
    old = created()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3, "collisionCount": 0}
    old["status"]["collisionCount"] = 1
    assert errors(STS.validate_status_update(new, old)) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than status.readyReplicas",
        "status.collisionCount: Invalid value: 0: cannot be decremented",
    ]
    sts = created(replicas=3)
    sts["status"]["readyReplicas"] = 2
    assert [c.name for c in STS.columns()] == ["Name", "Ready", "Age", "Containers", "Images"]
    row = STS.row(sts)
    assert (row[0], row[1], row[3], row[4]) == ("web", "2/3", "nginx", "nginx")
    assert STS.scale_of(sts)["status"] == {"replicas": 0, "selector": "app=web"}
