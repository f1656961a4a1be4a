"""The NodeRestriction admission plugin (``plugin/pkg/admission/noderestriction``): a kubelet's identity
(``system:node:<name>`` in ``system:nodes``) may change only its own Node and the pods bound to it.

* nodes: create, update (``/status`` too) and delete only the Node of its own name, never change its taints, and
  set or change only the labels a kubelet may (``kubernetes.io/hostname``, ``topology.kubernetes.io/zone``, the
  ``node.kubernetes.io/`` and ``kubelet.kubernetes.io/`` ones …, and any outside kubernetes.io and k8s.io; never
  ``node-restriction.kubernetes.io/``), so it cannot steer workloads to itself;
* pods: create only mirror pods (``kubernetes.io/config.mirror``) bound to itself; delete, update ``/status`` and
  evict only pods whose ``spec.nodeName`` is itself.

The Node authorizer has already let the request through as far as the ``system:node`` rules go; this plugin looks
at the objects. Refusals are kube's 403: ``pods "web" is forbidden: node "n1" can only update pod status for pods
with spec.nodeName set to itself``. Other users are not concerned.
"""

from __future__ import annotations

from collections.abc import Mapping

from apimachinery import errors

from ..authentication import request_user
from ..authz.node import node_name
from .attributes import Attributes

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone"})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in_domain(domain: str, suffix: str) -> bool:
    return domain == suffix or domain.endswith("." + suffix)


def forbidden_label(key: str) -> bool:
    """``getForbiddenLabels``: node-restriction.kubernetes.io labels, and kubernetes.io / k8s.io labels a kubelet
    does not set itself."""
    domain = key.split("/", 1)[0] if "/" in key else ""
    if _in_domain(domain, "node-restriction.kubernetes.io"):
        return True
    if not (_in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")):
        return False
    return key not in KUBELET_LABELS and not any(_in_domain(domain, ns) for ns in KUBELET_LABEL_NAMESPACES)


def modified_labels(new: Mapping[str, str], old: Mapping[str, str]) -> list[str]:
    return sorted(key for key in {*new, *old} if new.get(key) != old.get(key))


class NodeRestriction:
    def configured(self) -> bool:
        """Asked per request: only a kubelet's identity is concerned."""
        return node_name(request_user()) is not None

    def concerns(self, group: str, resource: str) -> bool:
        return group == "" and resource in ("nodes", "pods")

    def handles(self, attrs: Attributes) -> bool:
        return attrs.group == "" and attrs.resource in ("nodes", "pods") and node_name(attrs.user) is not None

    async def validate(self, attrs: Attributes) -> None:
        node = node_name(attrs.user) or ""
        if attrs.resource == "nodes":
            self._node(attrs, node)
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
    def _node(attrs: Attributes, node: str) -> None:
        def refuse(reason: str) -> None:
            raise errors.forbidden("nodes", attrs.name, reason)

        if attrs.name != node:
            refuse(f'node "{node}" is not allowed to modify node "{attrs.name}"')
        new, old = attrs.obj or {}, attrs.old or {}
        labels = modified_labels((new.get("metadata") or {}).get("labels") or {},
                                 (old.get("metadata") or {}).get("labels") or {})
        bad = ", ".join(key for key in labels if forbidden_label(key))
        if attrs.operation == "CREATE" and bad:
            refuse(f'node "{node}" is not allowed to set the following labels: {bad}')
        if attrs.operation == "UPDATE":
            if (new.get("spec") or {}).get("taints") != (old.get("spec") or {}).get("taints"):
                refuse(f'node "{node}" is not allowed to modify taints')
            if bad:
                refuse(f"is not allowed to modify labels: {bad}")

    @staticmethod
    def _refuse(attrs: Attributes, reason: str) -> None:
        raise errors.forbidden("pods", attrs.name, reason)
