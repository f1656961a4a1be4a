"""authorization.k8s.io/v1: the access reviews ``kubectl auth can-i`` asks (virtual: answered, never stored).

What kube-apiserver does (``pkg/registry/authorization/*``, ``pkg/apis/authorization/validation``):

* ``SelfSubjectAccessReview``: may the requesting user do this? ``spec`` holds exactly one of
  ``resourceAttributes`` / ``nonResourceAttributes``; ``metadata`` must be empty;
* ``SubjectAccessReview``: the same for the ``spec.user`` / ``spec.groups`` given (at least one of them);
* ``LocalSubjectAccessReview`` (namespaced): a SubjectAccessReview confined to the namespace of the path:
  ``metadata`` may hold only that namespace, ``spec.resourceAttributes.namespace`` must equal it and
  ``nonResourceAttributes`` are not allowed;
* ``SelfSubjectRulesReview``: everything the requesting user may do in ``spec.namespace`` (required: 400 without
  it), for ``kubectl auth can-i --list``; the answer holds only ``status``, as kube-apiserver's does.

Every field error is a cause of one 422; the authorizer (``apiserver.authorizer``) decides ``status``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.validation import Raw, go_quote, invalid

from ..authentication import UserInfo
from ..authorizer import AUTHORIZER
from .strategy import Object
from .virtual import VirtualStrategy, empty_metadata

GROUP = "authorization.k8s.io"


def go_non_resource(value: Any) -> Raw:
    """``NonResourceAttributes`` as Go's ``%#v`` prints it in a field error."""
    value = value if isinstance(value, dict) else {}
    return Raw(f"authorization.NonResourceAttributes{{Path:{go_quote(str(value.get('path') or ''))}, "
               f"Verb:{go_quote(str(value.get('verb') or ''))}}}")


def validate_attributes(spec: dict[str, Any]) -> list[Cause]:
    """Exactly one of ``resourceAttributes`` and ``nonResourceAttributes`` (``ValidateSelfSubjectAccessReviewSpec``)."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        return [invalid("spec.nonResourceAttributes", go_non_resource(non_resource),
                        "cannot be specified in combination with resourceAttributes")]
    if resource is None and non_resource is None:
        # Go prints the nil *NonResourceAttributes it reports here as the string "null".
        return [invalid("spec.resourceAttributes", "null",
                        "exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    return []


def validate_subject(spec: dict[str, Any]) -> list[Cause]:
    """A SubjectAccessReview names the subject: ``spec.user`` or ``spec.groups``."""
    if not spec.get("user") and not spec.get("groups"):
        return [invalid("spec.user", spec.get("user") or "", "at least one of user or group must be specified")]
    return []


def spec_of(obj: Object) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def subject_of(spec: dict[str, Any]) -> UserInfo:
    """The user a SubjectAccessReview asks about."""
    return UserInfo(spec.get("user") or "", tuple(spec.get("groups") or ()), spec.get("uid") or "",
                    dict(spec.get("extra") or {}))


def attributes_of(spec: dict[str, Any]) -> dict[str, Any]:
    return dict(spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {})


class AccessReviewStrategy(VirtualStrategy):
    """The three access reviews: the same validation (``ValidateSubjectAccessReviewSpec`` and the empty-metadata
    rule) and the same answer, the authorizer's decision for the subject and the attributes."""

    group = GROUP
    namespaced = False
    # A self review asks about the requesting user; the others name the subject in spec.user / spec.groups.
    self_review: ClassVar[bool] = False

    def validate(self, obj: Object) -> list[Cause]:
        spec, meta = spec_of(obj), obj["metadata"]
        causes = validate_attributes(spec) + ([] if self.self_review else validate_subject(spec))
        allowed = ("namespace",) if self.namespaced else ()
        if not empty_metadata(meta, *allowed):
            causes.append(invalid("metadata", meta, "must be empty except for namespace" if allowed
                                  else "must be empty"))
        return causes

    def answer(self, obj: Object, user: UserInfo) -> Object:
        subject = user if self.self_review else subject_of(spec_of(obj))
        obj["status"] = AUTHORIZER.authorize(subject, attributes_of(spec_of(obj))).to_status()
        return obj


class SelfSubjectAccessReviewStrategy(AccessReviewStrategy):
    kind = "SelfSubjectAccessReview"
    resource = "selfsubjectaccessreviews"
    singular = "selfsubjectaccessreview"
    self_review = True


class SubjectAccessReviewStrategy(AccessReviewStrategy):
    kind = "SubjectAccessReview"
    resource = "subjectaccessreviews"
    singular = "subjectaccessreview"


class LocalSubjectAccessReviewStrategy(AccessReviewStrategy):
    kind = "LocalSubjectAccessReview"
    resource = "localsubjectaccessreviews"
    singular = "localsubjectaccessreview"
    namespaced = True

    def validate(self, obj: Object) -> list[Cause]:
        causes = super().validate(obj)
        spec, namespace = spec_of(obj), obj["metadata"].get("namespace") or ""
        resource = spec.get("resourceAttributes")
        if isinstance(resource, dict) and (resource.get("namespace") or "") != namespace:
            causes.append(invalid("spec.resourceAttributes.namespace", resource.get("namespace") or "",
                                  "must match metadata.namespace"))
        if spec.get("nonResourceAttributes") is not None:
            causes.append(invalid("spec.nonResourceAttributes", go_non_resource(spec["nonResourceAttributes"]),
                                  "disallowed on this kind of request"))
        return causes


class SelfSubjectRulesReviewStrategy(VirtualStrategy):
    kind = "SelfSubjectRulesReview"
    resource = "selfsubjectrulesreviews"
    singular = "selfsubjectrulesreview"
    group = GROUP
    namespaced = False

    def answer(self, obj: Object, user: UserInfo) -> Object:
        namespace = spec_of(obj).get("namespace") or ""
        if not namespace:
            raise errors.BadRequest("no namespace on request")
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {}, "spec": {},
                "status": AUTHORIZER.rules_for(user, namespace)}
