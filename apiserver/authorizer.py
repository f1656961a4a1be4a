"""The authorizer: kubelab allows every request, as kube-apiserver does with ``--authorization-mode=AlwaysAllow``.

Nothing in the request path asks it (everything is allowed); the access reviews do, so that ``kubectl auth can-i``
answers what this server would do. Its two questions are kube-apiserver's ``authorizer.Authorizer`` and
``authorizer.RuleResolver``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .authentication import UserInfo

ALWAYS_ALLOW_REASON = "kubelab allows every request (AlwaysAllow authorizer)"


@dataclass(frozen=True)
class Decision:
    """``SubjectAccessReviewStatus`` fields: ``allowed``, ``denied`` (left out when false) and ``reason``."""

    allowed: bool
    reason: str = ""
    denied: bool = False

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"allowed": self.allowed}
        if self.denied:
            status["denied"] = True
        if self.reason:
            status["reason"] = self.reason
        return status


class AlwaysAllow:
    """Allows everything; its rules say so in one resource rule and one non-resource rule, complete."""

    def authorize(self, user: UserInfo, attributes: dict[str, Any]) -> Decision:
        return Decision(True, ALWAYS_ALLOW_REASON)

    def rules_for(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """A ``SubjectRulesReviewStatus`` (``incomplete`` is always written: it has no ``omitempty``)."""
        return {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False}


AUTHORIZER = AlwaysAllow()
