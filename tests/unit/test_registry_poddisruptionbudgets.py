"""PodDisruptionBudgets: ValidatePodDisruptionBudget's causes, the status rules, the table kubectl 1.32 prints, and
the eviction's budget decisions (canIgnorePDB, which budgets select a pod, checkAndDecrement)."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery import errors
from apiserver.registry.eviction import can_ignore_pdb, decremented, matching_pdbs
from apiserver.registry.poddisruptionbudgets import PodDisruptionBudgetStrategy

PDB = PodDisruptionBudgetStrategy()


def messages(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def budget(name: str = "web", status: dict[str, Any] | None = None, generation: int = 1,
           **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "generation": generation},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}, "status": status or {}}


def pod(phase: str = "Running", labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web-1", "namespace": "default", "labels": labels or {"app": "web"}, **meta},
            "status": {"phase": phase}}


def test_create_clears_status_and_valid_budgets_pass() -> None:
    obj = budget(minAvailable="50%", unhealthyPodEvictionPolicy="AlwaysAllow", status={"disruptionsAllowed": 9})
    PDB.prepare_for_create(obj)
    assert obj["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    assert PDB.validate(obj) == []
    assert PDB.validate(budget(maxUnavailable=0)) == []
    assert PDB.validate(budget()) == []  # neither is required by the apiserver (kubectl create pdb asks for one)


def test_validation_follows_validate_pod_disruption_budget() -> None:
    got = messages(PDB.validate(budget(minAvailable=-1, maxUnavailable="150%", unhealthyPodEvictionPolicy="Never",
                                       selector={"matchLabels": {"app": "a b"}})))
    assert got[0].startswith("spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)")
    assert got[0].endswith(": minAvailable and maxUnavailable cannot be both set")
    assert got[1:] == [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
        'spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be '
        "greater than 100%",
        got[3],
        'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", '
        '"IfHealthyBudget"',
    ]
    assert got[3].startswith('spec.selector.matchLabels: Invalid value: "a b": a valid label must be')
    assert messages(PDB.validate(budget(minAvailable="half"))) == [
        'spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"half"}: a valid percent '
        "string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
        "is '[0-9]+%')"]


def test_status_counts_must_not_be_negative() -> None:
    assert messages(PDB.validate_status_update(budget(status={"disruptionsAllowed": -1, "expectedPods": 2}),
                                               budget())) == [
        "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"]


def test_table_row_as_kubectl_prints_it() -> None:
    assert [c.name for c in PDB.columns()] == ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions",
                                              "Age"]
    row = PDB.row(budget(maxUnavailable="25%", status={"disruptionsAllowed": 2}))
    assert row[:4] == ["web", "N/A", "25%", 2]
    assert PDB.row(budget(minAvailable=2))[1:3] == ["2", "N/A"]


def test_which_pods_skip_the_budget_and_which_budgets_select_a_pod() -> None:
    assert can_ignore_pdb(pod("Pending")) and can_ignore_pdb(pod("Succeeded")) and can_ignore_pdb(pod("Failed"))
    assert can_ignore_pdb(pod(deletionTimestamp="2026-01-01T00:00:00Z"))
    assert not can_ignore_pdb(pod())
    everything = {"metadata": {"name": "all", "namespace": "default"}, "spec": {"selector": {}}}
    nothing = {"metadata": {"name": "none", "namespace": "default"}, "spec": {}}
    elsewhere = {**budget("other"), "metadata": {"name": "other", "namespace": "prod"}}
    found = matching_pdbs([budget(), budget("db", selector={"matchLabels": {"app": "db"}}), everything, nothing,
                           elsewhere], pod())
    assert [b["metadata"]["name"] for b in found] == ["web", "all"]  # policy/v1: {} selects every pod


def test_check_and_decrement() -> None:
    ok = budget(status={"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
                        "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods"}]})
    new = decremented(ok, "web-1", dry_run=False)
    assert new["status"]["disruptionsAllowed"] == 0 and list(new["status"]["disruptedPods"]) == ["web-1"]
    assert new["status"]["conditions"][0]["reason"] == "InsufficientPods"
    assert "disruptedPods" not in decremented(ok, "web-1", dry_run=True)["status"]
    with pytest.raises(errors.TooManyRequests) as refused:
        decremented(new, "web-2", dry_run=False)
    assert refused.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert [(c.type, c.message) for c in refused.value.causes] == [
        ("DisruptionBudget", "The disruption budget web needs 2 healthy pods and has 3 currently")]
    with pytest.raises(errors.TooManyRequests) as stale:
        decremented(budget(generation=2, status=ok["status"]), "web-1", dry_run=False)
    assert stale.value.causes[0].message == "The disruption budget web is still being processed by the server."
    with pytest.raises(errors.Forbidden):
        decremented(budget(status={"observedGeneration": 1, "disruptionsAllowed": -1}), "web-1", dry_run=False)
