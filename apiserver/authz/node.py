"""The Node authorizer (``plugin/pkg/auth/authorizer/node``): what a kubelet's identity may do.

A user ``system:node:<name>`` in group ``system:nodes`` may

* get a secret, config map, persistent volume claim or service account only when one of the pods bound to its node
  uses it (the ``nodegraph``), and request tokens only for those service accounts;
* use only its own Lease in ``kube-node-lease``;
* do the rest of what the ``system:node`` role grants (its Node, pods, pods' status, events, …), which the
  NodeRestriction admission plugin then confines to its own objects.

Other users get no opinion, so RBAC decides for them. Like kube's, the authorizer lists the ``system:node`` rules
for a node identity in a rules review.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..authentication import UserInfo
from ..authorizer import Rules
from .nodegraph import NodeGraph
from .rbac import rules_review
from .rules import Rule, any_allows

NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
NODE_LEASE_NAMESPACE = "kube-node-lease"
GRAPH_RESOURCES = frozenset({"secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes"})
LEASE_VERBS = frozenset({"get", "create", "update", "patch", "delete"})


def node_name(user: UserInfo) -> str | None:
    """The node a user is the kubelet of (``nodeidentifier``), or None."""
    if NODES_GROUP not in user.groups or not user.username.startswith(NODE_USER_PREFIX):
        return None
    return user.username[len(NODE_USER_PREFIX):] or None


class NodeAuthorizer:
    def __init__(self, graph: NodeGraph, node_rules: tuple[Rule, ...]) -> None:
        self.graph = graph
        self.node_rules = node_rules

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        node = node_name(user)
        if node is None:
            return None, ""
        if "path" not in attributes and (attributes.get("group") or "") in ("", "coordination.k8s.io"):
            resource = attributes.get("resource") or ""
            if resource in GRAPH_RESOURCES and attributes.get("group", "") == "":
                return self._graph_get(node, attributes)
            if resource == "serviceaccounts" and attributes.get("subresource") == "token":
                return self._token(node, attributes)
            if resource == "leases" and attributes.get("group") == "coordination.k8s.io":
                return self._lease(node, attributes)
        if any_allows(self.node_rules, attributes):
            return True, ""
        return None, ""

    def _graph_get(self, node: str, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        if attributes.get("verb") != "get" or not attributes.get("name") or attributes.get("subresource"):
            return None, "can only get individual resources of this type"
        vertex = (attributes["resource"], attributes.get("namespace") or "", attributes["name"])
        if self.graph.has_edge(vertex, node):
            return True, ""
        return None, f"no relationship found between node '{node}' and this object"

    def _token(self, node: str, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        if attributes.get("verb") != "create" or not attributes.get("name"):
            return None, "can only create tokens for individual service accounts"
        if self.graph.has_edge(("serviceaccounts", attributes.get("namespace") or "", attributes["name"]), node):
            return True, ""
        return None, f"no relationship found between node '{node}' and this object"

    @staticmethod
    def _lease(node: str, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        if attributes.get("verb") not in LEASE_VERBS:
            return None, "can only get, create, update, patch, or delete a node lease"
        if attributes.get("namespace") != NODE_LEASE_NAMESPACE:
            return None, f"can only access leases in the {NODE_LEASE_NAMESPACE} namespace"
        if attributes.get("verb") != "create" and attributes.get("name") != node:
            return None, "can only access node lease with the same name as the requesting node"
        return True, ""

    def rules(self, user: UserInfo, namespace: str) -> Rules:
        if node_name(user) is None:
            return Rules([], [])
        return rules_review(self.node_rules, [])
