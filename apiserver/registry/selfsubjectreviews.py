"""authentication.k8s.io/v1 SelfSubjectReview: who am I? (``kubectl auth whoami``; virtual: answered, never stored).

kube-apiserver's ``pkg/registry/authentication/selfsubjectreview`` ignores the body's content and answers a new
object: ``metadata.creationTimestamp`` now and ``status.userInfo`` the user the request was authenticated as
(on the plain port ``system:unsecured`` in ``system:masters``, or whom the impersonation headers name).
"""

from __future__ import annotations

from apimachinery.meta import now_rfc3339

from ..authentication import UserInfo
from .strategy import Object
from .virtual import VirtualStrategy


class SelfSubjectReviewStrategy(VirtualStrategy):
    kind = "SelfSubjectReview"
    resource = "selfsubjectreviews"
    singular = "selfsubjectreview"
    group = "authentication.k8s.io"
    namespaced = False

    def answer(self, obj: Object, user: UserInfo) -> Object:
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                "metadata": {"creationTimestamp": now_rfc3339()}, "status": {"userInfo": user.to_dict()}}
