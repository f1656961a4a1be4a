"""Virtual create-only resources: kinds that are answered, never stored (the access reviews, SelfSubjectReview).

kube-apiserver serves these with a ``rest.Creater`` and no storage: a POST decodes the object, validates it
(422 Invalid with causes) and returns it with ``status`` filled in, 201 Created; nothing reaches etcd, so there is
no watch cache, and GET/LIST/WATCH are 405 (the only verb is ``create``). A ``VirtualStrategy`` says what is
answered; ``VirtualStore`` is the generic create path the REST handler drives, in the same order as the stored
resources' (decode with field validation → namespace of the path → apiVersion/kind → validate → answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import orjson

from apimachinery import errors

from ..authentication import UserInfo
from ..storage.cacher import CachedObject
from .decoder import Decoder
from .store import kubernetes_order
from .strategy import Object, Strategy


class VirtualStrategy(Strategy):
    """A create-only resource whose answer is computed from the request object and the requesting user."""

    verbs: ClassVar[tuple[str, ...]] = ("create",)
    bumps_generation = False

    def answer(self, obj: Object, user: UserInfo) -> Object:
        """The response object: ``obj`` (validated, its namespace set) with ``status`` filled in."""
        raise NotImplementedError

    async def answer_async(self, obj: Object, user: UserInfo) -> Object:
        """``answer`` for strategies that wait on something (TokenReview asks the authenticators)."""
        return self.answer(obj, user)


def empty_metadata(meta: dict[str, Any], *allowed: str) -> bool:
    """Whether ``metadata`` holds nothing but zero values, ``managedFields`` and ``allowed`` keys (Go's
    ``DeepEqual(ObjectMeta{}, meta)`` check of the reviews)."""
    return not any(value for key, value in meta.items() if key not in ("managedFields", *allowed))


class VirtualStore:
    """The create path of one virtual resource: nothing is stored, the answer is returned as a 201."""

    def __init__(self, strategy: VirtualStrategy, decoder: Decoder | None = None,
                 on_warning: Callable[[str], None] | None = None) -> None:
        self.strategy = strategy
        self.decoder = decoder
        self.on_warning = on_warning

    def create(self, obj: Object, namespace: str | None, user: UserInfo,
               field_validation: str = "Ignore") -> CachedObject:
        self._admit(obj, namespace, field_validation)
        return self._answered(self.strategy.answer(obj, user))

    async def create_async(self, obj: Object, namespace: str | None, user: UserInfo,
                           field_validation: str = "Ignore") -> CachedObject:
        """``create`` for every strategy, those whose answer waits too (the REST handler's path)."""
        self._admit(obj, namespace, field_validation)
        return self._answered(await self.strategy.answer_async(obj, user))

    def _admit(self, obj: Object, namespace: str | None, field_validation: str) -> None:
        """Decode, namespace, apiVersion/kind and validation: what every create does before answering."""
        strategy = self.strategy
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.BadRequest("metadata must be an object")
        if self.decoder is not None:
            for warning in self.decoder.decode(obj, strategy.group, strategy.version, strategy.kind,
                                               field_validation):
                if self.on_warning is not None:
                    self.on_warning(warning)
        if strategy.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.BadRequest("the namespace of the provided object does not match the namespace sent "
                                        "on the request")
            meta["namespace"] = namespace or meta.get("namespace")
        else:
            meta.pop("namespace", None)
        obj["apiVersion"] = strategy.api_version
        obj["kind"] = strategy.kind
        causes = strategy.validate(obj)
        if causes:
            raise errors.invalid(strategy.kind, meta.get("name") or "", causes, strategy.group)

    @staticmethod
    def _answered(answer: Object) -> CachedObject:
        answer = kubernetes_order(answer)
        answer_meta = answer.setdefault("metadata", {})
        answer_meta.setdefault("creationTimestamp", None)  # what Go writes for a zero metav1.Time
        return CachedObject(answer_meta.get("name") or "", answer, orjson.dumps(answer), 0, {}, {})
