"""The DefaultIngressClass admission plugin (``plugin/pkg/admission/network/defaultingressclass``), on by default.

A new Ingress that names no class (no ``spec.ingressClassName``, no legacy ``kubernetes.io/ingress.class``
annotation) gets the IngressClass annotated ``ingressclass.kubernetes.io/is-default-class: "true"``; with several
such classes, the newest (then the first by name), as kube 1.32 chooses. Like Priority, it sets a valid field of
the new object in place (no re-defaulting needed) and costs nothing to other resources.
"""

from __future__ import annotations

import logging

from .attributes import Attributes
from .sources import Sources

log = logging.getLogger(__name__)

GROUP = "networking.k8s.io"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


class DefaultIngressClass:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def configured(self) -> bool:
        return True  # on by default, like kube's

    def concerns(self, group: str, resource: str) -> bool:
        return group == GROUP and resource == "ingresses"

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.group == GROUP and attrs.resource == "ingresses" and not attrs.subresource
                and attrs.operation == "CREATE" and attrs.obj is not None)

    def default_class(self) -> str | None:
        """``getDefaultClass``: the newest class annotated as the default, or None."""
        defaults = [ic["metadata"] for ic in self.sources.list(GROUP, "ingressclasses")
                    if (ic["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
        if not defaults:
            return None
        defaults.sort(key=lambda meta: meta["name"])
        defaults.sort(key=lambda meta: meta.get("creationTimestamp") or "", reverse=True)
        if len(defaults) > 1:
            log.info("%d default IngressClasses were found, choosing the newest: %s", len(defaults),
                     defaults[0]["name"])
        return str(defaults[0]["name"])

    async def admit(self, attrs: Attributes) -> None:
        ingress = attrs.obj or {}
        if LEGACY_CLASS_ANNOTATION in ((ingress.get("metadata") or {}).get("annotations") or {}):
            return
        spec = ingress.setdefault("spec", {})
        if spec.get("ingressClassName") is not None:
            return
        name = self.default_class()
        if name is not None:
            spec["ingressClassName"] = name
