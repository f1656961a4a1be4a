"""kubelab.testing's pure parts: kubectl wait's --for forms, and reading a directory of manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelab.testing import ApplyError, _as_dict, _check, _load

READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Stalled", "status": "False"}]}}


def test_a_condition_holds_when_its_status_is_true_by_default() -> None:
    assert _check("Ready")(READY)
    assert _check("condition=ready")(READY)  # kubectl compares condition types case-insensitively
    assert not _check("condition=Stalled")(READY)
    assert _check("condition=Stalled=False")(READY)
    assert not _check("Ready")(None)


def test_delete_holds_only_once_the_object_is_gone() -> None:
    assert _check("delete")(None)
    assert not _check("delete")(READY)


def test_jsonpath_compares_the_value_as_text() -> None:
    pod = {"status": {"phase": "Running", "replicas": 3}}
    assert _check("jsonpath={.status.phase}=Running")(pod)
    assert _check("jsonpath={.status.replicas}=3")(pod)
    assert not _check("jsonpath={.status.phase}=Pending")(pod)
    assert not _check("jsonpath={.spec.missing}=x")(pod)


def test_a_predicate_sees_the_object() -> None:
    assert _check(lambda obj: "status" in obj)(READY)
    assert not _check(lambda obj: True)(None)


def test_a_directory_is_read_recursively_namespaces_and_crds_first(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
                                     "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n")
    (tmp_path / "b" / "crd.yml").write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                                            "metadata: {name: x.example.com}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    kinds = [doc["kind"] for doc in _load(tmp_path)]
    assert kinds == ["Namespace", "CustomResourceDefinition", "ConfigMap"]


def test_a_list_is_applied_item_by_item(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n")
    assert [doc["metadata"]["name"] for doc in _load(path)] == ["a"]


def test_a_document_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("just: a mapping\n")
    with pytest.raises(ApplyError, match="apiVersion and kind are required"):
        _load(path)


def test_wait_for_takes_a_kubernetes_client_model_as_well_as_a_dict() -> None:
    kubernetes = pytest.importorskip("kubernetes")
    model = kubernetes.client.V1ConfigMap(api_version="v1", kind="ConfigMap",
                                          metadata=kubernetes.client.V1ObjectMeta(name="c", namespace="n"))
    assert _as_dict(model) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    with pytest.raises(TypeError, match="not str"):
        _as_dict("configmap/c")
