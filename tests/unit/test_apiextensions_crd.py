"""CustomResourceDefinitions: defaults, validation, deletion marks, accepted names, and the custom resource
strategy built from one (columns, scale, selectable fields, versions)."""

from __future__ import annotations

import copy
from typing import Any

from apiserver.apiextensions import crd as crds
from apiserver.apiextensions import jsonpath
from apiserver.apiextensions.strategy import CustomResourceStrategy
from apiserver.registry.customresourcedefinitions import CustomResourceDefinitionStrategy

CRD: dict[str, Any] = {
    "metadata": {"name": "widgets.example.com", "uid": "u1"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
             "versions": [
                 {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                  "schema": {"openAPIV3Schema": {"type": "object"}}},
                 {"name": "v1", "served": True, "storage": True,
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                                                                "mode": {"type": "string"}}},
                      "status": {"type": "object", "properties": {"ready": {"type": "integer"},
                                                                  "selector": {"type": "string"}}}}}},
                  "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                           "statusReplicasPath": ".status.ready",
                                                           "labelSelectorPath": ".status.selector"}},
                  "selectableFields": [{"jsonPath": ".spec.mode"}],
                  "additionalPrinterColumns": [
                      {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                      {"name": "Ready", "type": "string",
                       "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}]}]}}


def created() -> dict[str, Any]:
    obj = copy.deepcopy(CRD)
    CustomResourceDefinitionStrategy().prepare_for_create(obj)
    return obj


def test_defaults_and_initial_status() -> None:
    obj = created()
    assert obj["spec"]["names"]["singular"] == "widget" and obj["spec"]["names"]["listKind"] == "WidgetList"
    assert obj["spec"]["conversion"] == {"strategy": "None"}
    assert obj["status"]["storedVersions"] == ["v1"]
    assert CustomResourceDefinitionStrategy().validate(obj) == []


def test_validation_messages() -> None:
    obj = created()
    obj["metadata"]["name"] = "wrong"
    obj["spec"]["group"] = "nodot"
    obj["spec"]["scope"] = "Everywhere"
    obj["spec"]["names"]["kind"] = "Bad_Kind"
    causes = {(c.field, c.message) for c in CustomResourceDefinitionStrategy().validate(obj)}
    assert ("metadata.name", 'Invalid value: "wrong": must be spec.names.plural+"."+spec.group') in causes
    assert ("spec.group", 'Invalid value: "nodot": should be a domain with at least one dot') in causes
    assert ("spec.scope", 'Unsupported value: "Everywhere": supported values: "Cluster", "Namespaced"') in causes
    protected = created()
    protected["spec"]["group"] = "widgets.k8s.io"
    protected["metadata"]["name"] = "widgets.widgets.k8s.io"
    assert [(c.field, c.message) for c in CustomResourceDefinitionStrategy().validate(protected)] == [
        ("metadata.annotations[api-approved.kubernetes.io]", 'Required value: protected groups must have approval '
         'annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111')]
    assert any(f == "spec.names.kind" and m.startswith('Invalid value: "Bad_Kind": may have mixed case, but should '
                                                       "otherwise match: ") for f, m in causes)


def test_updates_keep_group_and_plural_and_record_storage_versions() -> None:
    strategy = CustomResourceDefinitionStrategy()
    old = created()
    new = copy.deepcopy(old)
    new["spec"]["group"] = "other.com"
    for v in new["spec"]["versions"]:
        v["storage"] = v["name"] == "v1beta1"
    strategy.prepare_for_update(new, old)
    assert new["status"]["storedVersions"] == ["v1", "v1beta1"]
    assert ("spec.group", 'Invalid value: "other.com": field is immutable') in \
        {(c.field, c.message) for c in strategy.validate_update(new, old)}


def test_the_first_delete_marks_the_crd_for_cleanup() -> None:
    strategy = CustomResourceDefinitionStrategy()
    obj = created()
    assert strategy.deletion_pending(obj)
    strategy.prepare_for_delete(obj)
    assert obj["metadata"]["finalizers"] == [crds.CLEANUP_FINALIZER]
    terminating = crds.condition(obj, "Terminating")
    assert terminating is not None and terminating["reason"] == "InstanceDeletionPending"


def test_served_versions_in_kube_priority_order() -> None:
    names = ["v1alpha1", "foo", "v2", "v1", "v1beta2", "v1beta1", "v10"]
    assert sorted(names, key=crds.version_priority) == ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]


def test_custom_resource_strategy_columns_scale_fields_and_versions() -> None:
    strategy = CustomResourceStrategy(created(), "v1")
    obj = {"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "w", "namespace": "n", "creationTimestamp": "2020-01-01T00:00:00Z"},
           "spec": {"size": 3, "mode": "fast"},
           "status": {"ready": 2, "selector": "app=w", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert [c.name for c in strategy.columns()] == ["Name", "Size", "Ready"]
    assert strategy.row(obj) == ["w", 3, "True"]
    assert strategy.scale_of(obj)["spec"] == {"replicas": 3}
    assert strategy.scale_of(obj)["status"] == {"replicas": 2, "selector": "app=w"}
    strategy.apply_scale(obj, 5)
    assert obj["spec"]["size"] == 5
    assert strategy.selectable_fields(obj) == {"metadata.name": "w", "metadata.namespace": "n", "spec.mode": "fast"}
    assert strategy.spec_changed({**obj, "status": {}}, obj) is False
    beta = CustomResourceStrategy(created(), "v1beta1")
    assert beta.deprecation_warning == "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"
    assert beta.to_storage(obj)["apiVersion"] == "example.com/v1"
    assert beta.from_storage(copy.deepcopy(obj))["apiVersion"] == "example.com/v1beta1"
    assert [c.name for c in beta.columns()] == ["Name", "Age"]


def test_jsonpath_subset() -> None:
    obj = {"a": {"b": [{"n": 1, "k": "x"}, {"n": 2, "k": "y"}]}}
    assert jsonpath.find(obj, ".a.b[*].n") == [1, 2]
    assert jsonpath.find(obj, '{.a.b[?(@.k=="y")].n}') == [2]
    assert jsonpath.get(obj, ".a.b[0].k") == "x" and jsonpath.get(obj, ".a.missing") is None
    target: dict[str, Any] = {}
    jsonpath.set_path(target, ".spec.replicas", 2)
    assert target == {"spec": {"replicas": 2}}


def test_the_rule_validator_plugs_into_every_served_version() -> None:
    from apimachinery.errors import Cause

    class ReplicasRule:
        """What a CEL validator answers for ``self.size <= 5`` (x-kubernetes-validations on spec)."""

        def validate(self, schema: dict[str, Any], obj: Any, old: Any) -> list[Cause]:
            size = (obj.get("spec") or {}).get("size", 0)
            return [Cause("FieldValueInvalid", f"Invalid value: {size}: too big", "spec")] if size > 5 else []

    strategy = CustomResourceStrategy(created(), "v1", ReplicasRule())
    ok = {"metadata": {"name": "w"}, "spec": {"size": 3}}
    assert strategy.validate(ok) == []
    big = {"metadata": {"name": "w"}, "spec": {"size": 9}}
    assert [c.message for c in strategy.validate_update(big, ok)] == ["Invalid value: 9: too big"]
    assert [c.message for c in strategy.validate_status_update(big, ok)] == ["Invalid value: 9: too big"]
