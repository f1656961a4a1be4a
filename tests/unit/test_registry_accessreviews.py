"""The reviews (virtual create-only resources): kube-apiserver's validation of the access reviews, their answers
from the allow-all authorizer, SelfSubjectReview, and the requesting user from the impersonation headers."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery import errors
from apiserver.authentication import ANONYMOUS, UserInfo, user_from_headers
from apiserver.authorizer import ALWAYS_ALLOW_REASON
from apiserver.handlers.rest import check_verb
from apiserver.openapi.documents import swagger
from apiserver.registry.accessreviews import (
    LocalSubjectAccessReviewStrategy,
    SelfSubjectAccessReviewStrategy,
    SelfSubjectRulesReviewStrategy,
    SubjectAccessReviewStrategy,
)
from apiserver.registry.decoder import Decoder
from apiserver.registry.selfsubjectreviews import SelfSubjectReviewStrategy
from apiserver.registry.strategy import Strategy
from apiserver.registry.virtual import VirtualStore

PODS = {"namespace": "default", "verb": "create", "resource": "pods"}
LOGS = {"path": "/logs", "verb": "get"}
ALICE = UserInfo("alice", ("dev", "system:authenticated"))


def review(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"metadata": dict(metadata), "spec": spec}


def store(strategy: Any) -> VirtualStore:
    return VirtualStore(strategy, Decoder(swagger()["definitions"]))


def causes(err: pytest.ExceptionInfo[errors.StatusError]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in err.value.to_status()["details"]["causes"]]


def test_self_subject_access_review_needs_exactly_one_kind_of_attributes() -> None:
    ssar = SelfSubjectAccessReviewStrategy()
    assert ssar.validate(review({"resourceAttributes": PODS})) == []
    assert ssar.validate(review({"nonResourceAttributes": LOGS})) == []
    [neither] = ssar.validate(review({}))
    assert (neither.field, neither.message) == (
        "spec.resourceAttributes",
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified')
    [both] = ssar.validate(review({"resourceAttributes": PODS, "nonResourceAttributes": LOGS}))
    assert (both.field, both.message) == (
        "spec.nonResourceAttributes", 'Invalid value: authorization.NonResourceAttributes{Path:"/logs", '
                                      'Verb:"get"}: cannot be specified in combination with resourceAttributes')
    [meta] = ssar.validate(review({"resourceAttributes": PODS}, name="mine"))
    assert meta.field == "metadata" and meta.message.endswith("must be empty")
    assert ssar.validate(review({"resourceAttributes": PODS}, creationTimestamp=None, managedFields=[])) == []


def test_subject_access_review_needs_a_user_or_groups() -> None:
    sar = SubjectAccessReviewStrategy()
    [no_subject] = sar.validate(review({"resourceAttributes": PODS}))
    assert (no_subject.field, no_subject.message) == (
        "spec.user", 'Invalid value: "": at least one of user or group must be specified')
    assert sar.validate(review({"resourceAttributes": PODS, "user": "bob"})) == []
    assert sar.validate(review({"resourceAttributes": PODS, "groups": ["dev"]})) == []


def test_local_subject_access_review_stays_in_its_namespace() -> None:
    lsar = LocalSubjectAccessReviewStrategy()
    ok = review({"resourceAttributes": PODS, "user": "bob"}, namespace="default")
    assert lsar.validate(ok) == []
    other = review({"resourceAttributes": {**PODS, "namespace": "other"}, "user": "bob"}, namespace="default")
    assert [(c.field, c.message) for c in lsar.validate(other)] == [
        ("spec.resourceAttributes.namespace", 'Invalid value: "other": must match metadata.namespace')]
    non_resource = review({"nonResourceAttributes": LOGS, "user": "bob"}, namespace="default", labels={"a": "b"})
    assert [(c.field, c.message.split(": ")[-1]) for c in lsar.validate(non_resource)] == [
        ("metadata", "must be empty except for namespace"),
        ("spec.nonResourceAttributes", "disallowed on this kind of request")]


def test_answers_come_from_the_allow_all_authorizer() -> None:
    answer = store(SubjectAccessReviewStrategy()).create(
        {"spec": {"resourceAttributes": PODS, "user": "bob"}}, None, ANONYMOUS).obj
    assert answer["apiVersion"] == "authorization.k8s.io/v1" and answer["kind"] == "SubjectAccessReview"
    assert answer["metadata"] == {"creationTimestamp": None}
    assert answer["spec"] == {"resourceAttributes": PODS, "user": "bob"}
    assert answer["status"] == {"allowed": True, "reason": ALWAYS_ALLOW_REASON}
    rules = store(SelfSubjectRulesReviewStrategy()).create({"spec": {"namespace": "default"}}, None, ALICE).obj
    assert rules["spec"] == {} and rules["status"] == {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
    with pytest.raises(errors.BadRequest, match="no namespace on request"):
        store(SelfSubjectRulesReviewStrategy()).create({"spec": {}}, None, ALICE)


def test_the_store_checks_namespace_kind_and_fields_before_validating() -> None:
    lsar = store(LocalSubjectAccessReviewStrategy())
    spec = {"resourceAttributes": PODS, "user": "bob"}
    assert lsar.create(review(spec), "default", ANONYMOUS).obj["metadata"]["namespace"] == "default"
    with pytest.raises(errors.BadRequest, match="does not match the namespace sent on the request"):
        lsar.create(review(spec, namespace="other"), "default", ANONYMOUS)
    with pytest.raises(errors.Invalid) as invalid:
        lsar.create(review({"resourceAttributes": PODS}), "kube-system", ANONYMOUS)
    assert invalid.value.code == 422 and causes(invalid) == [
        ("spec.user", 'Invalid value: "": at least one of user or group must be specified'),
        ("spec.resourceAttributes.namespace", 'Invalid value: "default": must match metadata.namespace')]
    with pytest.raises(errors.BadRequest, match="unknown field"):
        store(SelfSubjectAccessReviewStrategy()).create({"spec": {"resourceAttributes": PODS, "bogus": 1}}, None,
                                                        ANONYMOUS, "Strict")


def test_self_subject_review_is_the_requesting_user() -> None:
    answer = store(SelfSubjectReviewStrategy()).create({}, None, ANONYMOUS).obj
    assert answer["status"] == {"userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]}}
    assert answer["metadata"]["creationTimestamp"] and "spec" not in answer
    answer = store(SelfSubjectReviewStrategy()).create({}, None, UserInfo("bob", (), "u1", {"k": ["v"]})).obj
    assert answer["status"]["userInfo"] == {"username": "bob", "uid": "u1", "extra": {"k": ["v"]}}


def test_the_requesting_user_comes_from_the_impersonation_headers() -> None:
    assert user_from_headers([(b"accept", b"application/json")]) == ANONYMOUS
    assert user_from_headers([(b"impersonate-user", b"alice")]) == UserInfo("alice", ("system:authenticated",))
    assert user_from_headers([(b"impersonate-user", b"alice"), (b"impersonate-group", b"dev"),
                              (b"impersonate-group", b"ops")]).groups == ("dev", "ops", "system:authenticated")
    assert user_from_headers([(b"impersonate-user", b"alice"),
                              (b"impersonate-group", b"system:unauthenticated")]).groups == ("system:unauthenticated",)
    sa = user_from_headers([(b"impersonate-user", b"system:serviceaccount:ci:builder")])
    assert sa.groups == ("system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated")
    extra = user_from_headers([(b"impersonate-user", b"bob"), (b"impersonate-uid", b"42"),
                               (b"impersonate-extra-Scopes", b"a"), (b"impersonate-extra-scopes", b"b")])
    assert extra.uid == "42" and extra.extra == {"scopes": ["a", "b"]}
    assert user_from_headers([(b"impersonate-user", b"system:anonymous")]) == UserInfo("system:anonymous")
    with pytest.raises(errors.InternalError, match="without impersonating a user"):
        user_from_headers([(b"impersonate-group", b"dev")])


def test_only_the_declared_verbs_are_routed() -> None:
    create_only = SelfSubjectAccessReviewStrategy.verbs
    check_verb(create_only, "POST", False, False)
    for method, watch in (("GET", False), ("GET", True), ("DELETE", False), ("PUT", False)):
        with pytest.raises(errors.MethodNotAllowed, match=f"({method})"):
            check_verb(create_only, method, False, watch)
    with pytest.raises(errors.NotFound):
        check_verb(create_only, "GET", True, False)  # no object paths at all
    everything = Strategy.verbs  # the default: all eight verbs
    check_verb(everything, "GET", True, True)
    check_verb(everything, "DELETE", False, False)
    with pytest.raises(errors.MethodNotAllowed):
        check_verb(everything, "POST", True, False)
