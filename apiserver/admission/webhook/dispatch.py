"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: calling the matching webhooks and reading their answers.

* Mutating webhooks run one after another in configuration-name order; each sees the changes of those before it.
  A JSONPatch answer changes the object; when a webhook changed it, the earlier webhooks with
  ``reinvocationPolicy: IfNeeded`` are called once more after the first pass (kube's single reinvocation round).
* Validating webhooks run in parallel; the first refusal in webhook order is the answer.
* A refusal is ``admission webhook "<name>" denied the request: <message>`` with the webhook's code (at least 400)
  and reason; a failed call (unreachable, timed out, a bad answer) is ignored with ``failurePolicy: Ignore`` and
  is otherwise a 500 ``failed calling webhook "<name>": <why>``.
* A dry-run request calls only webhooks whose ``sideEffects`` are None or NoneOnDryRun (the only ones v1 stores);
  any other is kube's 400 ``admission webhook "<name>" does not support dry run``.
* ``matchConditions`` (CEL) decide last whether a matching webhook is called.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from apimachinery import errors
from apimachinery.patch import jsonpatch

from ..attributes import Attributes, Object
from ..matching import convert_through
from ..sources import Sources
from .client import CallError, WebhookClient
from .configurations import Configurations, Invocation, Webhook
from .review import InvalidResponse, new_request_uid, review_request, verify_response

log = logging.getLogger(__name__)
NO_SIDE_EFFECTS_ON_DRY_RUN = ("None", "NoneOnDryRun")


class MatchConditions(Protocol):
    """Evaluates a webhook's ``matchConditions`` (``apiserver.admission.conditions``)."""

    def matches(self, owner: str, conditions: list[dict[str, Any]], attrs: Attributes) -> bool:
        """All conditions true: call the webhook; any false: skip it; an error raises ``ConditionError``."""


class ConditionError(Exception):
    """A matchCondition could not be evaluated (its text is kube's)."""


def denied(webhook: str, status: Object | None) -> errors.StatusError:
    """``webhookerrors.ToStatusErr``: the webhook's Status with kube's message, code at least 400."""
    status = dict(status or {})
    denied_by = f'admission webhook "{webhook}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    code = int(status.get("code") or 0)
    err = errors.StatusError.from_status({**status, "message": message, "code": max(code, 400)})
    err.code = max(code, 400)  # type: ignore[misc]
    err.reason = str(status.get("reason") or "")  # type: ignore[misc]
    return err


def call_failed(webhook: str, reason: str) -> errors.StatusError:
    return errors.InternalError(f'Internal error occurred: failed calling webhook "{webhook}": {reason}')


class Webhooks:
    """What both plugins share: the configurations, the client, the call with its checks."""

    mutating = False

    def __init__(self, sources: Sources, client: WebhookClient, on_warning: Callable[[str], None],
                 conditions: MatchConditions | None = None) -> None:
        self.sources = sources
        self.client = client
        self.on_warning = on_warning
        self.conditions = conditions
        resource = "mutatingwebhookconfigurations" if self.mutating else "validatingwebhookconfigurations"
        self.configurations = Configurations(sources, resource)

    def configured(self) -> bool:
        return bool(self.configurations.webhooks())

    def concerns(self, group: str, resource: str) -> bool:
        return True

    def handles(self, attrs: Attributes) -> bool:
        return self.configured()

    def invocations(self, attrs: Attributes) -> list[Invocation]:
        out: list[Invocation] = []
        for webhook in self.configurations.webhooks():
            invocation = self.configurations.invocation(webhook, attrs)
            if invocation is not None and self._conditions_match(webhook, attrs):
                out.append(invocation)
        return out

    def _conditions_match(self, webhook: Webhook, attrs: Attributes) -> bool:
        conditions = webhook.spec.get("matchConditions") or []
        if not conditions or self.conditions is None:
            return True
        try:
            return self.conditions.matches(webhook.name, conditions, attrs)
        except ConditionError as err:
            if webhook.failure_policy == "Ignore":
                log.warning("matchConditions of webhook %s failed, failing open: %s", webhook.name, err)
                return False
            raise errors.InternalError(f'Internal error occurred: failed calling webhook "{webhook.name}": '
                                       f"{err}") from None

    def _request_strategy(self, attrs: Attributes) -> Any:
        return next((s for s in self.sources.equivalents(attrs.group, attrs.resource)
                     if s.version == attrs.version), None)

    async def call(self, invocation: Invocation, attrs: Attributes) -> list[Any] | None:
        """Call one webhook about ``attrs``: its JSONPatch (mutating) or None; raises kube's errors."""
        webhook = invocation.webhook
        if attrs.dry_run and webhook.spec.get("sideEffects") not in NO_SIDE_EFFECTS_ON_DRY_RUN:
            raise errors.BadRequest(f'admission webhook "{webhook.name}" does not support dry run')
        sent = attrs
        if invocation.strategy is not None:
            source = self._request_strategy(attrs)
            target = invocation.strategy
            sent = replace(attrs, group=target.group, version=target.version, kind=target.kind,
                           obj=await convert_through(attrs.obj, source, target),
                           old=await convert_through(attrs.old, source, target))
        uid = new_request_uid()
        review = review_request(uid, sent, attrs, webhook.review_version)
        try:
            answer = await self.client.post(webhook.spec.get("clientConfig") or {}, review, webhook.timeout)
            result = verify_response(uid, self.mutating, answer, webhook.review_version)
        except (CallError, InvalidResponse) as err:
            reason = str(err)
            if isinstance(err, InvalidResponse) and not reason.startswith("received undecodable"):
                reason = f"received invalid webhook response: {reason}"
            if webhook.failure_policy == "Ignore":
                log.warning("Failed calling webhook, failing open %s: %s", webhook.name, reason)
                return None
            log.warning("Failed calling webhook, failing closed %s: %s", webhook.name, reason)
            raise call_failed(webhook.name, reason) from None
        for warning in result.warnings:
            self.on_warning(warning)
        if not result.allowed:
            raise denied(webhook.name, result.status)
        return result.patch or None


class MutatingWebhooks(Webhooks):
    """The MutatingAdmissionWebhook plugin."""

    mutating = True

    async def admit(self, attrs: Attributes) -> None:
        invocations = self.invocations(attrs)
        if not invocations:
            return
        invoked_if_needed: list[str] = []
        reinvoke: set[str] = set()
        for invocation in invocations:
            if await self._admit_one(invocation, attrs):
                reinvoke.update(invoked_if_needed)
            if invocation.webhook.spec.get("reinvocationPolicy") == "IfNeeded":
                invoked_if_needed.append(invocation.webhook.uid)
        if reinvoke:
            for invocation in self.invocations(attrs):
                if invocation.webhook.uid in reinvoke:
                    await self._admit_one(invocation, attrs)

    async def _admit_one(self, invocation: Invocation, attrs: Attributes) -> bool:
        """Call one webhook and apply its patch to ``attrs.obj``; whether the object changed."""
        patch = await self.call(invocation, attrs)
        if not patch:
            return False
        name = invocation.webhook.name
        if attrs.obj is None:
            raise errors.InternalError(f'Internal error occurred: admission webhook "{name}" attempted to modify '
                                       f"the object, which is not supported for this operation")
        source = self._request_strategy(attrs) if invocation.strategy is not None else None
        current = await convert_through(attrs.obj, source, invocation.strategy)
        try:
            patched = jsonpatch.apply(current, patch)
        except errors.StatusError as err:
            raise errors.InternalError(f"Internal error occurred: {err.message}") from None
        if not isinstance(patched, dict):
            raise errors.InternalError("Internal error occurred: the patched object is not a JSON object")
        patched = await convert_through(patched, invocation.strategy, source) if source is not None else patched
        assert patched is not None
        changed = patched != attrs.obj
        attrs.obj = patched
        return changed


class ValidatingWebhooks(Webhooks):
    """The ValidatingAdmissionWebhook plugin: every matching webhook at once."""

    async def validate(self, attrs: Attributes) -> None:
        invocations = self.invocations(attrs)
        if not invocations:
            return
        results = await asyncio.gather(*(self.call(invocation, attrs) for invocation in invocations),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
