"""ObjectMeta validation shared by every resource (``ValidateObjectMeta`` / ``ValidateObjectMetaUpdate``)."""

from __future__ import annotations

from typing import Any

from apimachinery import validation
from apimachinery.errors import Cause

from .strategy import Strategy

# core's ValidateFinalizerName: an unqualified finalizer must be one of Kubernetes' own. The generic ObjectMeta
# validation CRDs and custom resources get (apiextensions) only asks for a qualified name.
_CORE_ONLY = "name is neither a standard finalizer name nor is it fully qualified"


def _generic(causes: list[Cause], strategy: Strategy) -> list[Cause]:
    if strategy.core_finalizer_names:
        return causes
    return [c for c in causes if not c.message.endswith(_CORE_ONLY)]


def validate_meta_create(meta: dict[str, Any], strategy: Strategy) -> list[Cause]:
    return _generic(validation.validate_object_meta(meta, strategy.namespaced, strategy.name_validator), strategy)


def validate_meta_update(meta: dict[str, Any], old_meta: dict[str, Any], strategy: Strategy) -> list[Cause]:
    return _generic(validation.validate_object_meta(meta, strategy.namespaced, strategy.name_validator) +
                    validation.validate_object_meta_update(meta, old_meta), strategy)
