"""Webhook conversion of custom resources (kube-apiextensions-apiserver's ``webhookConverter``).

A CRD with ``spec.conversion.strategy: Webhook`` has objects converted between its versions by an HTTPS webhook
(``webhook.clientConfig``: ``url`` or ``service``, ``caBundle``), called through the admission webhooks' client
(``apiserver.admission.webhook.client``: TLS, Service resolution, timeouts) with a ``ConversionReview`` in the
first of ``conversionReviewVersions`` this apiserver speaks (v1, else v1beta1):

* only objects whose ``apiVersion`` differs from the one wanted are sent, all of one call in one review;
  none at all when every object is in that version already;
* the answer is checked as kube checks it: the review's kind and ``response.uid`` (v1 only), ``result.status``
  Success, one object back per object sent, each of the wanted group/version and the same kind, name,
  namespace and uid; of the returned metadata only labels and annotations are kept, the rest is the original's;
* every failure is ``conversion webhook for <group>/<version>, Kind=<kind> failed: <why>`` (or ``returned …``),
  raised as a 500 InternalError, which is what kube-apiserver answers for it.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.validation import validate_annotations, validate_labels
from apiserver.admission.webhook.client import CallError, WebhookClient

Object = dict[str, Any]
REVIEW_VERSIONS = ("v1", "v1beta1")  # what this apiserver speaks, kube's ``acceptedConversionReviewVersions``
TIMEOUT_SECONDS = 30  # kube's webhook client default for conversion calls


class ConversionFailed(errors.InternalError):
    """kube's ``NewInternalError`` around the converter's error text."""

    def __init__(self, text: str) -> None:
        super().__init__(f"Internal error occurred: {text}", causes=[Cause("", text)])


class WebhookConverter:
    """The ``Converter`` of one CRD's versions (``apiserver.registry.strategy.Converter``)."""

    def __init__(self, crd: Object, client: WebhookClient, storage_version: str) -> None:
        spec = crd["spec"]
        webhook = (spec.get("conversion") or {}).get("webhook") or {}
        self.group = spec["group"]
        self.kind = ((crd.get("status") or {}).get("acceptedNames") or {}).get("kind") or spec["names"]["kind"]
        self.client_config: Object = webhook.get("clientConfig") or {}
        self.review_versions: list[str] = list(webhook.get("conversionReviewVersions") or [])
        self.storage_api_version = f"{self.group}/{storage_version}"
        self.client = client

    async def convert(self, objs: list[Object], api_version: str) -> list[Object]:
        pending = [i for i, o in enumerate(objs) if o.get("apiVersion") != api_version]
        if not pending:
            return objs
        source = f"{objs[pending[0]].get('apiVersion', '')}, Kind={self.kind}"
        review_version = next((v for v in self.review_versions if v in REVIEW_VERSIONS), None)
        if review_version is None:
            raise ConversionFailed("no supported conversion review versions")
        uid = str(uuid.uuid4())
        review = {"apiVersion": f"apiextensions.k8s.io/{review_version}", "kind": "ConversionReview",
                  "request": {"uid": uid, "desiredAPIVersion": api_version,
                              "objects": [objs[i] for i in pending]}}
        try:
            answer = await self.client.call(self.client_config, review, TIMEOUT_SECONDS)
            converted = _converted_objects(answer, review_version, uid)
        except CallError as err:
            raise ConversionFailed(f"conversion webhook for {source} failed: {err}") from None
        if len(converted) != len(pending):
            raise ConversionFailed(f"conversion webhook for {source} returned {len(converted)} objects, "
                                   f"expected {len(pending)}")
        out = list(objs)
        for index, (i, new) in enumerate(zip(pending, converted, strict=False)):
            why = _invalid_object(objs[i], new, api_version)
            if why is not None:
                raise ConversionFailed(f"conversion webhook for {source} returned invalid object at index "
                                       f"{index}: {why}")
            why = _restore_metadata(objs[i], new)
            if why is not None:
                raise ConversionFailed(f"conversion webhook for {source} returned invalid metadata in object at "
                                       f"index {index}: {why}")
            out[i] = new
        return out


def _converted_objects(answer: Any, review_version: str, uid: str) -> list[Object]:
    """``getConvertedObjectsFromResponse``: the response's objects, or why the response is refused."""
    if not isinstance(answer, dict):
        raise CallError(f"unrecognized response type: {type(answer).__name__}")
    if review_version == "v1" and (answer.get("apiVersion"), answer.get("kind")) != \
            ("apiextensions.k8s.io/v1", "ConversionReview"):
        got = f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}".lstrip("/")
        raise CallError(f"expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise CallError("no response provided")
    if review_version == "v1" and response.get("uid") != uid:
        raise CallError(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    result = response.get("result") or {}
    if result.get("status") != "Success":
        raise CallError(result.get("message") or
                        f"response.result.status was '{result.get('status', '')}', not 'Success'")
    objects = response.get("convertedObjects") or []
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise CallError("response.convertedObjects must be a list of objects")
    return objects


def _invalid_object(original: Object, new: Object, api_version: str) -> str | None:
    """What is wrong with a converted object's identity (``validateConvertedObject`` and the version check)."""
    if new.get("apiVersion") != api_version:
        return f"invalid groupVersion (expected {api_version}, received {new.get('apiVersion', '')})"
    if new.get("kind") != original.get("kind"):
        return f"invalid kind (expected {original.get('kind')}, received {new.get('kind', '')})"
    before, after = original.get("metadata") or {}, new.get("metadata")
    if not isinstance(after, dict):
        return None  # reported by _restore_metadata
    for field, name in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if (before.get(field) or "") != (after.get(field) or ""):
            return f"must have the same {name}: {before.get(field) or ''} != {after.get(field) or ''}"
    return None


def _restore_metadata(original: Object, new: Object) -> str | None:
    """``restoreObjectMeta``: ``new`` gets the original's metadata with the webhook's labels and annotations."""
    returned = new.get("metadata")
    if returned is None:
        return "missing metadata in converted object"
    if not isinstance(returned, dict):
        return f"invalid metadata of type {type(returned).__name__} in converted object"
    meta = copy.deepcopy(original.get("metadata") or {})
    for field, validate in (("labels", validate_labels), ("annotations", validate_annotations)):
        value = returned.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{field} of type {type(value).__name__} in converted object"
        for key, item in value.items():
            if not isinstance(item, str):
                return f"metadata.{field}[{key}] must be a string, but is {type(item).__name__} in converted object"
        if value != (meta.get(field) or {}):
            causes = validate(value, "metadata.annotation" if field == "annotations" else "metadata.labels")
            if causes:
                return "; ".join(f"{c.field}: {c.message}" for c in causes)
        meta[field] = value
    new["metadata"] = meta
    return None
