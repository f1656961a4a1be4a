"""The webhooks of the stored configurations, in the order kube calls them, and which of them a request needs.

Configurations are sorted by name and their webhooks kept in order (kube's ``*WebhookConfigurationSorter``); the
list is rebuilt only when the resource's watch cache moved. ``invocation`` is kube's ``ShouldCallHook``: the
namespace selector, the object selector, then the rules against the request's own resource, then — with
``matchPolicy: Equivalent`` — against the other served versions of it (autoscaling/v1 and v2
HorizontalPodAutoscalers), which the webhook is then sent in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...registry.strategy import Strategy
from ..attributes import Attributes
from ..matching import namespace_matches, object_matches, rule_matches
from ..sources import Sources

GROUP = "admissionregistration.k8s.io"


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a configuration; ``uid`` tells webhooks of the same name in two configurations apart."""

    configuration: str
    index: int
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def uid(self) -> str:
        return f"{self.configuration}/{self.index}"

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def timeout(self) -> int:
        return int(self.spec.get("timeoutSeconds") or 10)

    @property
    def review_version(self) -> str:
        versions = self.spec.get("admissionReviewVersions") or ["v1"]
        return "v1" if "v1" in versions else "v1beta1"


@dataclass(frozen=True, slots=True)
class Invocation:
    """A webhook to call, with the request as it is to be sent (``sent``: another version when Equivalent)."""

    webhook: Webhook
    strategy: Strategy | None  # the matched version's strategy when it is not the request's


class Configurations:
    """The webhooks of one resource (mutating or validating configurations), kept in step with its cache."""

    def __init__(self, sources: Sources, resource: str) -> None:
        self.sources = sources
        self.resource = resource
        self._revision = -1
        self._webhooks: list[Webhook] = []

    def webhooks(self) -> list[Webhook]:
        revision = self.sources.revision(GROUP, self.resource)
        if revision != self._revision:
            webhooks: list[Webhook] = []
            for co in self.sources.cached(GROUP, self.resource):
                name = co.obj["metadata"]["name"]
                webhooks.extend(Webhook(name, i, hook) for i, hook in enumerate(co.obj.get("webhooks") or []))
            self._webhooks, self._revision = webhooks, revision
        return self._webhooks

    def invocation(self, webhook: Webhook, attrs: Attributes) -> Invocation | None:
        """``ShouldCallHook`` (matchConditions are the dispatcher's, after this)."""
        spec = webhook.spec
        if not namespace_matches(spec.get("namespaceSelector"), attrs, self.sources):
            return None
        if not object_matches(spec.get("objectSelector"), attrs):
            return None
        rules = spec.get("rules") or []
        if any(rule_matches(rule, attrs) for rule in rules):
            return Invocation(webhook, None)
        if (spec.get("matchPolicy") or "Equivalent") != "Equivalent":
            return None
        others = [s for s in self.sources.equivalents(attrs.group, attrs.resource) if s.version != attrs.version]
        for rule in rules:
            for strategy in others:
                if rule_matches(rule, replace(attrs, group=strategy.group, version=strategy.version)):
                    return Invocation(webhook, strategy)
        return None
