"""The clusterrole-aggregation controller (``pkg/controller/clusterroleaggregation``): a ClusterRole with an
``aggregationRule`` holds the rules of every ClusterRole its selectors match.

* any ClusterRole added, changed or deleted enqueues every aggregated ClusterRole (any of them may now select
  it, or no longer);
* ``sync(name)`` reads the cache: the rules of the matching roles (itself excluded) in name order, each rule once;
  written (an update of the whole object) only when they differ from the stored ones. Conflicts are retried by
  the worker loop.

So ``admin``, ``edit`` and ``view`` gain the rules of any ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-<name>: "true"`` — how CRD authors extend the default roles.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from apimachinery.labels import selector_from_label_selector
from apimachinery.meta import Object
from controllers.support.base import Controller
from kubeclient import CLUSTER_ROLES, Clientset, DeletedFinalStateUnknown, InformerFactory

log = logging.getLogger(__name__)


def aggregated_rules(role: Object, roles: list[Object]) -> list[dict[str, Any]]:
    """The rules of the roles ``role``'s selectors match, in name order, without repeats."""
    selectors = [selector_from_label_selector(s) for s in (role.get("aggregationRule") or {}).get(
        "clusterRoleSelectors") or []]
    rules: list[dict[str, Any]] = []
    for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
        if other["metadata"]["name"] == role["metadata"]["name"]:
            continue
        labels = other["metadata"].get("labels") or {}
        if any(selector.matches(labels) for selector in selectors):
            rules.extend(rule for rule in other.get("rules") or [] if rule not in rules)
    return rules


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation-controller"
    queue_name = "ClusterRoleAggregator"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.client = clientset.resource(CLUSTER_ROLES)
        self.informer = factory.informer(CLUSTER_ROLES)
        self.informers = [self.informer]
        self.informer.add_event_handler(self._enqueue_all, lambda old, new: self._enqueue_all(new),
                                        self._enqueue_all)

    def _enqueue_all(self, _: Object | DeletedFinalStateUnknown) -> None:
        for role in self.informer.indexer.list():
            if role.get("aggregationRule") is not None:
                self.queue.add(role["metadata"]["name"])

    async def sync(self, key: str) -> None:
        role = self.informer.indexer.get_by_key(key)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.informer.indexer.list())
        if rules == (role.get("rules") or []):
            return
        updated = copy.deepcopy(role)
        updated["rules"] = rules
        await self.client.update(updated)
        log.info("aggregated %d rules into clusterrole %s", len(rules), key)
