"""ValidatingAdmissionPolicy type checking against the served OpenAPI schemas: misspelt fields of ``object`` and
``oldObject`` are warned about with kube's text; maps, lists and other variables are left alone."""

from __future__ import annotations

from types import SimpleNamespace

from apiserver.admission.policy.typecheck import TypeChecker
from apiserver.openapi import documents


def checker() -> TypeChecker:
    deployments = SimpleNamespace(strategy=SimpleNamespace(kind="Deployment"))
    registry = SimpleNamespace(versions={("apps", "v1", "deployments"): deployments})
    return TypeChecker(registry, documents.swagger()["definitions"])  # type: ignore[arg-type]


def spec(*expressions: str, resources: tuple[str, ...] = ("deployments",)) -> dict[str, object]:
    return {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                    "operations": ["CREATE"], "resources": list(resources)}]},
            "validations": [{"expression": e} for e in expressions]}


def test_misspelt_fields_are_warned_about() -> None:
    warnings = checker().warnings(spec("object.spec.replicas <= 5", "object.spec.replica <= 5",
                                       "oldObject == null || oldObject.metadata.lables['a'] == 'b'"))
    assert warnings == [
        {"fieldRef": "spec.validations[1].expression",
         "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
                    " | object.spec.replica <= 5\n"
                    " | ...........^"},
        {"fieldRef": "spec.validations[2].expression",
         "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:40: undefined field 'lables'\n"
                    " | oldObject == null || oldObject.metadata.lables['a'] == 'b'\n"
                    " | .......................................^"}]


def test_maps_lists_and_wildcards_are_not_checked() -> None:
    assert checker().warnings(spec("object.metadata.labels.anything == 'x'",
                                   "object.spec.template.spec.containers.all(c, c.imagee != '')",
                                   "params.whatever > 1")) == []
    assert checker().warnings(spec("object.spec.replica <= 5", resources=("*",))) == []
