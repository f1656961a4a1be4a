"""The RuntimeClass admission plugin (``plugin/pkg/admission/runtimeclass``), on by default in kube-apiserver.

A new pod naming a ``runtimeClassName`` must name an existing RuntimeClass (403 ``pod rejected: RuntimeClass "x"
not found``); the class's ``overhead.podFixed`` becomes the pod's ``spec.overhead`` (one the pod gave must match),
and its ``scheduling`` is merged into the pod: node selector labels added (a conflicting value is refused), its
tolerations appended. A pod with an ``overhead`` but no RuntimeClass is refused. Like Priority, it changes the new
pod in place and concerns only pods.
"""

from __future__ import annotations

from typing import Any

from apimachinery import errors

from .attributes import Attributes
from .sources import Sources

GROUP = "node.k8s.io"


class RuntimeClass:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def configured(self) -> bool:
        return True

    def concerns(self, group: str, resource: str) -> bool:
        return group == "" and resource == "pods"

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.group == "" and attrs.resource == "pods" and not attrs.subresource
                and attrs.operation == "CREATE" and attrs.obj is not None)

    def _refuse(self, attrs: Attributes, reason: str) -> errors.StatusError:
        return errors.forbidden(attrs.resource, attrs.name, reason)

    async def admit(self, attrs: Attributes) -> None:
        spec = (attrs.obj or {}).setdefault("spec", {})
        name = spec.get("runtimeClassName")
        if not name:
            return
        runtime_class = self.sources.get(GROUP, "runtimeclasses", None, name)
        if runtime_class is None:
            raise self._refuse(attrs, f'pod rejected: RuntimeClass "{name}" not found')
        overhead = (runtime_class.get("overhead") or {}).get("podFixed")
        if overhead:
            if spec.get("overhead") and spec["overhead"] != overhead:
                raise self._refuse(attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
                                          "Overhead")
            spec["overhead"] = dict(overhead)
        scheduling = runtime_class.get("scheduling") or {}
        selector: dict[str, Any] = dict(spec.get("nodeSelector") or {})
        for key, value in (scheduling.get("nodeSelector") or {}).items():
            if key in selector and selector[key] != value:
                raise self._refuse(attrs, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                          f"pod.spec.nodeSelector[{key}] = {selector[key]}")
            selector[key] = value
        if selector:
            spec["nodeSelector"] = selector
        tolerations = list(spec.get("tolerations") or [])
        tolerations.extend(t for t in scheduling.get("tolerations") or [] if t not in tolerations)
        if tolerations:
            spec["tolerations"] = tolerations

    async def validate(self, attrs: Attributes) -> None:
        spec = (attrs.obj or {}).get("spec") or {}
        if spec.get("overhead") and not spec.get("runtimeClassName"):
            raise self._refuse(attrs, "pod rejected: Pod Overhead set without corresponding RuntimeClass")
