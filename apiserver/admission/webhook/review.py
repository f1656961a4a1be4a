"""The AdmissionReview exchange (``admission.k8s.io/v1``): the request a webhook gets, the checks on its answer.

A webhook matched through ``matchPolicy: Equivalent`` on another version of the resource is sent that version's
``kind``/``resource`` and object, while ``requestKind``/``requestResource`` keep what the client asked for.
The response's checks and their texts are kube's ``VerifyAdmissionResponse``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimachinery.meta import new_uid

from ..attributes import Attributes, Object

API_VERSION = "admission.k8s.io/v1"
PATCH_TYPE_JSON = "JSONPatch"


def review_request(uid: str, sent: Attributes, requested: Attributes, review_version: str) -> Object:
    """The ``AdmissionReview`` POSTed to a webhook: ``sent`` in the matched version, ``requested`` as asked."""
    request: Object = {
        "uid": uid,
        "kind": sent.kind_dict(),
        "resource": sent.resource_dict(),
        "requestKind": requested.kind_dict(),
        "requestResource": requested.resource_dict(),
        "operation": sent.operation,
        "userInfo": sent.user.to_dict(),
        "object": sent.obj,
        "oldObject": sent.old,
        "dryRun": sent.dry_run,
        "options": sent.options,
    }
    if sent.subresource:
        request["subResource"] = sent.subresource
        request["requestSubResource"] = requested.subresource
    if sent.name:
        request["name"] = sent.name
    if sent.namespace:
        request["namespace"] = sent.namespace
    return {"apiVersion": f"admission.k8s.io/{review_version}", "kind": "AdmissionReview", "request": request}


def new_request_uid() -> str:
    return new_uid()


class InvalidResponse(Exception):
    """The answer is not an AdmissionReview response this apiserver accepts (kube's texts)."""


@dataclass(slots=True)
class ReviewResult:
    allowed: bool
    status: Object | None = None
    patch: list[Any] | None = None
    warnings: list[str] = field(default_factory=list)


def verify_response(uid: str, mutating: bool, review: Any, review_version: str) -> ReviewResult:
    """``VerifyAdmissionResponse``: the right kind and version, the request's uid, a patch only from a mutating
    webhook and only as JSONPatch."""
    if not isinstance(review, dict):
        raise InvalidResponse("webhook response was absent")
    expected = f"admission.k8s.io/{review_version}"
    if review.get("apiVersion") != expected or review.get("kind") != "AdmissionReview":
        got = f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
        raise InvalidResponse(f"expected webhook response of {expected}, Kind=AdmissionReview, got {got}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    if response.get("uid") != uid:
        raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    patch_raw, patch_type = response.get("patch"), response.get("patchType")
    patch: list[Any] | None = None
    if patch_raw or patch_type:
        if not mutating:
            raise InvalidResponse("validating webhook may not return response.patch or response.patchType")
        if not patch_type:
            raise InvalidResponse("webhook returned response.patch but not response.patchType")
        if patch_type != PATCH_TYPE_JSON:
            raise InvalidResponse(f'webhook returned invalid response.patchType of "{patch_type}"')
        if patch_raw:
            try:
                patch = orjson.loads(base64.b64decode(patch_raw, validate=True))
            except (binascii.Error, ValueError) as err:
                raise InvalidResponse(f"received undecodable patch in webhook response: {err}") from None
    warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
    status = response.get("status") if isinstance(response.get("status"), dict) else None
    return ReviewResult(bool(response.get("allowed")), status, patch, warnings)
