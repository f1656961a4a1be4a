"""The ``/scale`` subresource shared by ReplicationControllers, ReplicaSets and Deployments.

The handler of ``GET|PUT|PATCH …/{name}/scale`` asks the strategy for two things:

* ``scale_of(obj)`` — the ``autoscaling/v1`` ``Scale`` view of a stored object: ``spec.replicas``,
  ``status.replicas`` and ``status.selector`` as a selector *string* (what ``kubectl scale`` and the HPA read);
* ``apply_scale(obj, replicas)`` — write a new desired count into the object before it is stored as an
  ordinary update (so ``generation`` bumps and controllers react).

``validate_scale(scale)`` checks an incoming ``Scale`` body first (``spec.replicas`` may not be negative).
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import IS_NEGATIVE_ERROR_MSG, invalid
from apiserver.registry.strategy import Object, Strategy

SCALE_API_VERSION = "autoscaling/v1"


class ScalableStrategy(Strategy):
    """A strategy whose objects carry ``spec.replicas`` and expose ``/scale``."""

    def selector_string(self, obj: Object) -> str:
        """The pod selector as ``labels.Selector.String()`` renders it."""
        raise NotImplementedError

    def scale_of(self, obj: Object) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of ``obj`` (``spec.replicas`` is omitted when 0, as Go's omitempty)."""
        metadata = obj.get("metadata") or {}
        replicas = int((obj.get("spec") or {}).get("replicas") or 0)
        scale_meta = {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion",
                                                     "creationTimestamp") if metadata.get(key)}
        status: dict[str, Any] = {"replicas": int((obj.get("status") or {}).get("replicas") or 0)}
        selector = self.selector_string(obj)
        if selector:
            status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": SCALE_API_VERSION,
            "metadata": scale_meta,
            "spec": {"replicas": replicas} if replicas else {},
            "status": status,
        }

    def apply_scale(self, obj: Object, replicas: int) -> None:
        """Set the desired replica count; the caller then stores ``obj`` as an update of the main resource."""
        obj.setdefault("spec", {})["replicas"] = int(replicas)

    def validate_scale(self, scale: dict[str, Any]) -> list[Cause]:
        replicas = (scale.get("spec") or {}).get("replicas") or 0
        return [invalid("spec.replicas", replicas, IS_NEGATIVE_ERROR_MSG)] if replicas < 0 else []
