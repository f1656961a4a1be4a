"""The authorizer: kube-apiserver's ``--authorization-mode``, a union of authorizers asked in order.

Every request passes the authorization filter (``apiserver.authz.filter``) and the access reviews ask the same
chain, so ``kubectl auth can-i`` answers what this server does. Its two questions are kube-apiserver's
``authorizer.Authorizer`` (``authorize``) and ``authorizer.RuleResolver`` (``rules_for``):

* ``AlwaysAllow`` / ``AlwaysDeny``; ``Node`` (``authz.node``) and ``RBAC`` (``authz.rbac``);
* as kube-apiserver does, members of ``system:masters`` are allowed before any mode is asked (its
  privileged-groups authorizer), so the admin credentials work whatever the policy says;
* the first authorizer that allows (or denies) decides; with no opinion from any, the request is denied with
  their reasons joined (kube's ``unionAuthzHandler``).

``authorize`` takes authorizer attributes as a SubjectAccessReview writes them: ``resourceAttributes`` (``verb``,
``group``, ``resource``, ``subresource``, ``namespace``, ``name``) or ``nonResourceAttributes`` (``verb``,
``path``). ``configure`` installs the chain an apiserver was started with; ``AUTHORIZER`` delegates to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .authentication import UserInfo

ALWAYS_ALLOW_REASON = "kubelab allows every request (AlwaysAllow authorizer)"
ALWAYS_DENY_REASON = "Everything is forbidden."
PRIVILEGED_GROUP = "system:masters"
MODES = ("AlwaysAllow", "AlwaysDeny", "Node", "RBAC")


@dataclass(frozen=True)
class Decision:
    """``SubjectAccessReviewStatus`` fields: ``allowed``, ``denied`` (left out when false) and ``reason``."""

    allowed: bool
    reason: str = ""
    denied: bool = False
    evaluation_error: str = ""

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"allowed": self.allowed}
        if self.denied:
            status["denied"] = True
        if self.reason:
            status["reason"] = self.reason
        if self.evaluation_error:
            status["evaluationError"] = self.evaluation_error
        return status


@dataclass(frozen=True)
class Rules:
    """What one authorizer says a user may do in a namespace (``rules_for``)."""

    resource_rules: list[dict[str, Any]]
    non_resource_rules: list[dict[str, Any]]
    incomplete: bool = False
    errors: tuple[str, ...] = ()


class Member(Protocol):
    """One mode: ``authorize`` answers True (allow), False (deny) or None (no opinion), with a reason."""

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> tuple[bool | None, str]: ...

    def rules(self, user: UserInfo, namespace: str) -> Rules: ...


class AlwaysAllow:
    """Allows everything; its rules say so in one resource rule and one non-resource rule, complete."""

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        return True, ALWAYS_ALLOW_REASON

    def rules(self, user: UserInfo, namespace: str) -> Rules:
        return Rules([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                     [{"verbs": ["*"], "nonResourceURLs": ["*"]}])


class AlwaysDeny:
    """kube's ``alwaysDenyAuthorizer``: no opinion with a reason, so the union denies; no rules."""

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        return None, ALWAYS_DENY_REASON

    def rules(self, user: UserInfo, namespace: str) -> Rules:
        return Rules([], [])


class Union:
    """The chain of ``--authorization-mode``: the privileged group, then each mode in order."""

    def __init__(self, members: Sequence[Member], privileged: bool = True) -> None:
        self.members = list(members)
        self.privileged = privileged

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> Decision:
        if self.privileged and PRIVILEGED_GROUP in user.groups:
            return Decision(True)
        reasons: list[str] = []
        for member in self.members:
            verdict, reason = member.authorize(user, attributes)
            if verdict is True:
                return Decision(True, reason)
            if verdict is False:
                return Decision(False, reason, denied=True)
            if reason:
                reasons.append(reason)
        return Decision(False, "\n".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """A ``SubjectRulesReviewStatus`` (``incomplete`` is always written: it has no ``omitempty``)."""
        resource: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        incomplete = False
        errors: list[str] = []
        for member in self.members:
            rules = member.rules(user, namespace)
            resource.extend(rules.resource_rules)
            non_resource.extend(rules.non_resource_rules)
            incomplete = incomplete or rules.incomplete
            errors.extend(rules.errors)
        status: dict[str, Any] = {"resourceRules": resource, "nonResourceRules": non_resource,
                                  "incomplete": incomplete}
        if errors:
            status["evaluationError"] = "[" + ", ".join(errors) + "]" if len(errors) > 1 else errors[0]
        return status


class Configured:
    """The process's authorizer (one apiserver per process): AlwaysAllow until ``configure`` installs the modes."""

    def __init__(self) -> None:
        self.chain = Union([AlwaysAllow()])

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> Decision:
        return self.chain.authorize(user, attributes)

    def rules_for(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        return self.chain.rules_for(user, namespace)

    @property
    def allows_all(self) -> bool:
        """Whether every request is allowed (``AlwaysAllow`` first): the filter then asks nothing."""
        return isinstance(self.chain.members[0], AlwaysAllow)


def parse_modes(text: str) -> list[str]:
    """``--authorization-mode``: a comma list of known, unrepeated modes (ValueError with kube's words)."""
    modes = [mode.strip() for mode in text.split(",") if mode.strip()]
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"authorization-mode {mode!r} is not a valid mode")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization-mode {','.join(modes)!r} has mode specified more than once")
    return modes


AUTHORIZER = Configured()


def configure(members: Sequence[Member]) -> None:
    AUTHORIZER.chain = Union(members)
