"""ObjectMeta validation shared by every resource (``ValidateObjectMeta`` / ``ValidateObjectMetaUpdate``)."""

from __future__ import annotations

from typing import Any

from apimachinery import validation
from apimachinery.errors import Cause

from .strategy import Strategy


def validate_meta_create(meta: dict[str, Any], strategy: Strategy) -> list[Cause]:
    return validation.validate_object_meta(meta, strategy.namespaced, strategy.name_validator)


def validate_meta_update(meta: dict[str, Any], old_meta: dict[str, Any], strategy: Strategy) -> list[Cause]:
    return validation.validate_object_meta(meta, strategy.namespaced, strategy.name_validator) + \
        validation.validate_object_meta_update(meta, old_meta)
