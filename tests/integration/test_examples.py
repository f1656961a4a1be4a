"""Every YAML file in examples/ is valid for the real apiserver and the real kubectl: a server-side dry run
creates nothing, a real create stores what the file says (defaults added, nothing given changed), and the
walkthrough uses every example, in the default namespace, without two of them sharing a name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from apimachinery.quantity import parse_quantity
from conftest import ROOT, Kubectl

pytestmark = pytest.mark.kubectl

PROJECTS = ("kopf-operator",)  # example projects with tests of their own (test_pytest_plugin.py runs them)
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.yaml")
                  if p.relative_to(ROOT / "examples").parts[0] not in PROJECTS)
WALKTHROUGH = (ROOT / "docs" / "walkthrough.md").read_text()
# kind → (API prefix, resource, what kubectl calls it: "<resource>.<group>" outside the core group)
KINDS = {"Pod": ("/api/v1", "pods", "pod"),
         "ReplicationController": ("/api/v1", "replicationcontrollers", "replicationcontroller"),
         "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", "poddisruptionbudget.policy"),
         "Job": ("/apis/batch/v1", "jobs", "job.batch"),
         "DaemonSet": ("/apis/apps/v1", "daemonsets", "daemonset.apps")}


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), path
    return doc


def assert_subset(expected: Any, actual: Any, where: str = "") -> None:
    """Everything the file gives is stored unchanged (quantities compared by value: 1000 == 1k); the apiserver
    may only add: defaults, and the default tolerations after the pod's own."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} was dropped"
            assert_subset(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), where
        if where.endswith(".tolerations"):  # the default not-ready/unreachable ones are appended
            actual = actual[: len(expected)]
        assert len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_subset(e, a, f"{where}[{i}]")
    elif ".resources." in where:
        assert parse_quantity(str(actual)) == parse_quantity(str(expected)), where
    else:
        assert actual == expected, f"{where}: stored {actual!r}, file says {expected!r}"


def test_there_is_an_example_for_each_step() -> None:
    kinds = {p.relative_to(ROOT / "examples").parts[0] for p in EXAMPLES}
    assert kinds == {"01-creation-flow", "02-node-selection", "03-affinity", "04-taints", "05-phases",
                     "07-maintenance"}
    text = "\n".join(p.read_text() for p in EXAMPLES)
    for operator in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal"):
        assert re.search(rf"operator: {operator}\b", text), operator
    for effect in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        assert f"effect: {effect}" in text
    assert "tolerationSeconds:" in text and "requiredDuringScheduling" in text and "preferredDuringScheduling" in text


def test_the_walkthrough_uses_every_example_in_the_default_namespace_with_unique_names() -> None:
    names: dict[tuple[str, str], Path] = {}
    for path in EXAMPLES:
        rel = path.relative_to(ROOT).as_posix()
        assert f"kubectl apply -f {rel}" in WALKTHROUGH, f"{rel} is not applied in docs/walkthrough.md"
        doc = load(path)
        assert "namespace" not in doc["metadata"], f"{rel} must not pin a namespace"
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in names, f"{rel} and {names[key]} both define {key}"
        names[key] = path
    for rel in re.findall(r"examples/[\w./-]+\.yaml", WALKTHROUGH):
        assert (ROOT / rel).is_file(), f"docs/walkthrough.md refers to a missing {rel}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT / "examples").as_posix())
def test_example_is_accepted_by_the_apiserver(path: Path, kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    doc = load(path)
    kind, name = doc["kind"], doc["metadata"]["name"]
    prefix, resource, printed = KINDS[kind]
    url = f"{prefix}/namespaces/{ns}/{resource}/{name}"

    dry = kubectl("apply", "-f", str(path), "-n", ns, "--dry-run=server")
    assert dry.stdout.strip() == f"{printed}/{name} created (server dry run)"
    assert client.get(url).status_code == 404, "a dry run must not store anything"

    created = kubectl("create", "-f", str(path), "-n", ns)
    assert created.stdout.strip() == f"{printed}/{name} created"
    try:
        stored = client.get(url).json()
        assert_subset(doc["spec"], stored["spec"], "spec")
        assert_subset(doc["metadata"].get("labels", {}), stored["metadata"].get("labels", {}), "metadata.labels")
    finally:  # pods bound to node01/node02 must not wait for a kubelet of that name in the shared apiserver
        kubectl("delete", "-f", str(path), "-n", ns, "--grace-period=0", "--force", "--wait=false")
