"""apiserver.admission without a server: rule matching (kube's rules.Matcher cases), object selectors, the
AdmissionReview checks and the refusal texts."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery import errors
from apiserver.admission.attributes import Attributes
from apiserver.admission.matching import object_matches, rule_matches
from apiserver.admission.webhook.dispatch import denied
from apiserver.admission.webhook.review import InvalidResponse, review_request, verify_response
from apiserver.authentication import ANONYMOUS


def attrs(resource: str = "pods", subresource: str = "", namespace: str = "ns", group: str = "",
          operation: str = "CREATE", obj: dict[str, Any] | None = None) -> Attributes:
    return Attributes(operation, group, "v1", resource, subresource, "Pod",  # type: ignore[arg-type]
                      namespace, "p", bool(namespace), ANONYMOUS, obj=obj)


def rule(resources: list[str], scope: str = "*", operations: tuple[str, ...] = ("*",)) -> dict[str, Any]:
    return {"operations": list(operations), "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources,
            "scope": scope}


@pytest.mark.parametrize(("resources", "subresource", "matches"), [
    (["pods"], "", True), (["pods"], "status", False), (["pods/status"], "status", True),
    (["*"], "", True), (["*"], "status", False), (["pods/*"], "exec", True), (["*/status"], "status", True),
    (["*/*"], "binding", True), (["deployments"], "", False),
])
def test_resources_and_subresources(resources: list[str], subresource: str, matches: bool) -> None:
    assert rule_matches(rule(resources), attrs(subresource=subresource)) is matches


def test_scope_and_operations() -> None:
    assert rule_matches(rule(["*"], "Namespaced"), attrs()) is True
    assert rule_matches(rule(["*"], "Cluster"), attrs()) is False
    assert rule_matches(rule(["*"], "Cluster"), attrs("nodes", namespace="")) is True
    # A Namespace is cluster-scoped even though its requests carry its own name as namespace.
    assert rule_matches(rule(["*"], "Cluster"), attrs("namespaces", namespace="ns")) is True
    assert rule_matches(rule(["*"], "Namespaced"), attrs("namespaces", namespace="ns")) is False
    assert rule_matches(rule(["*"], operations=("UPDATE",)), attrs()) is False


def test_object_selector_looks_at_new_and_old() -> None:
    selector = {"matchLabels": {"app": "web"}}
    assert object_matches(selector, attrs(obj={"metadata": {"labels": {"app": "web"}}})) is True
    assert object_matches(selector, attrs(obj={"metadata": {}})) is False
    deleting = attrs(operation="DELETE")
    deleting.old = {"metadata": {"labels": {"app": "web"}}}
    assert object_matches(selector, deleting) is True


def test_review_request_and_response_checks() -> None:
    review = review_request("u1", attrs(subresource="status"), attrs(subresource="status"), "v1")
    assert review["request"]["subResource"] == "status" and review["request"]["requestSubResource"] == "status"
    ok = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u1", "allowed": True}}
    assert verify_response("u1", False, ok, "v1").allowed is True
    with pytest.raises(InvalidResponse, match='^expected response.uid="u2", got "u1"$'):
        verify_response("u2", False, ok, "v1")
    patched = {**ok, "response": {"uid": "u1", "allowed": True, "patch": "W10="}}
    with pytest.raises(InvalidResponse, match="^validating webhook may not return response.patch"):
        verify_response("u1", False, patched, "v1")
    with pytest.raises(InvalidResponse, match="^webhook returned response.patch but not response.patchType$"):
        verify_response("u1", True, patched, "v1")
    with pytest.raises(InvalidResponse, match="^expected webhook response of admission.k8s.io/v1, "
                                              "Kind=AdmissionReview, got admission.k8s.io/v1beta1, "
                                              "Kind=AdmissionReview$"):
        verify_response("u1", False, {**ok, "apiVersion": "admission.k8s.io/v1beta1"}, "v1")


def test_refusal_texts() -> None:
    err = denied("x.example.com", {"code": 200, "message": "nope"})
    assert (err.code, err.message) == (400, 'admission webhook "x.example.com" denied the request: nope')
    assert "reason" not in err.to_status()
    err = denied("x.example.com", {"reason": "Forbidden", "code": 403})
    assert err.message == 'admission webhook "x.example.com" denied the request: Forbidden'
    assert err.to_status()["reason"] == "Forbidden"
    assert denied("x.example.com", None).message == \
        'admission webhook "x.example.com" denied the request without explanation'
    assert isinstance(err, errors.StatusError)


def test_a_plugin_missing_a_protocol_method_is_refused_when_the_chain_is_built() -> None:
    from apiserver.admission.chain import AdmissionChain

    class NoConcerns:
        def configured(self) -> bool:
            return True

        def handles(self, attrs: object) -> bool:
            return True

        async def admit(self, attrs: object) -> None:
            return None

    with pytest.raises(TypeError, match="admission plugin NoConcerns lacks concerns"):
        AdmissionChain([NoConcerns()], [])  # type: ignore[list-item]
