"""The NodeRestriction admission plugin (``plugin/pkg/admission/noderestriction``): a kubelet's identity
(``system:node:<name>`` in ``system:nodes``) may change only its own Node and the pods bound to it.

* nodes: create, update (``/status`` too) and delete only the Node of its own name;
* pods: create only mirror pods (``kubernetes.io/config.mirror``) bound to itself; delete, update ``/status`` and
  evict only pods whose ``spec.nodeName`` is itself.

The Node authorizer has already let the request through as far as the ``system:node`` rules go; this plugin looks
at the objects. Refusals are kube's 403: ``pods "web" is forbidden: node "n1" can only update pod status for pods
with spec.nodeName set to itself``. Other users are not concerned.
"""

from __future__ import annotations

from apimachinery import errors

from ..authentication import request_user
from ..authz.node import node_name
from .attributes import Attributes

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class NodeRestriction:
    def configured(self) -> bool:
        """Asked per request: only a kubelet's identity is concerned."""
        return node_name(request_user()) is not None

    def handles(self, attrs: Attributes) -> bool:
        return attrs.group == "" and attrs.resource in ("nodes", "pods") and node_name(attrs.user) is not None

    async def validate(self, attrs: Attributes) -> None:
        node = node_name(attrs.user) or ""
        if attrs.resource == "nodes":
            if attrs.name != node:
                raise errors.forbidden("nodes", attrs.name, f'node "{node}" is not allowed to modify node '
                                                            f'"{attrs.name}"')
            return
        bound = ((attrs.old or attrs.obj or {}).get("spec") or {}).get("nodeName") or ""
        if attrs.operation == "CREATE" and not attrs.subresource:
            annotations = ((attrs.obj or {}).get("metadata") or {}).get("annotations") or {}
            if MIRROR_ANNOTATION not in annotations:
                self._refuse(attrs, f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can only '
                                    f"create mirror pods")
            if bound != node:
                self._refuse(attrs, f'node "{node}" can only create pods with spec.nodeName set to itself')
        elif attrs.operation == "DELETE" and bound != node:
            self._refuse(attrs, f'node "{node}" can only delete pods with spec.nodeName set to itself')
        elif attrs.subresource == "status" and bound != node:
            self._refuse(attrs, f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
        elif attrs.subresource == "eviction" and bound != node:
            self._refuse(attrs, f'node "{node}" can only evict pods with spec.nodeName set to itself')
        elif attrs.operation == "UPDATE" and not attrs.subresource:
            self._refuse(attrs, f'node "{node}" can only update pod status')

    @staticmethod
    def _refuse(attrs: Attributes, reason: str) -> None:
        raise errors.forbidden("pods", attrs.name, reason)
