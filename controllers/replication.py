"""The ReplicationController controller: the ReplicaSet controller over core/v1 ReplicationControllers.

Kubernetes runs the same code for both (``pkg/controller/replication`` wraps the ReplicaSet controller);
here the adapter is a ``ReplicaKind``: the resource, the event source ``replication-controller``, and the
selector — a plain ``key: value`` map for an RC (defaulting to the template's labels when unset, as the
API defaults it) instead of a ``LabelSelector``.
"""

from __future__ import annotations

from apimachinery.labels import Selector, selector_from_set
from apimachinery.meta import Object
from controllers.replicaset import ReplicaKind, ReplicaSetController
from kubeclient import REPLICATION_CONTROLLERS, Clientset, InformerFactory


def rc_selector(rc: Object) -> Selector:
    """``SelectorFromSet(spec.selector)``; an RC without one selects its template's labels."""
    spec = rc.get("spec") or {}
    labels = spec.get("selector") or ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    return selector_from_set(labels)


REPLICATION_CONTROLLER_KIND = ReplicaKind(REPLICATION_CONTROLLERS, "replication-controller", rc_selector,
                                         "replicationmanager")


def new_replication_controller(clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                               burst_replicas: int = 500) -> ReplicaSetController:
    """The ReplicaSet controller configured for ReplicationControllers."""
    return ReplicaSetController(clientset, factory, kind=REPLICATION_CONTROLLER_KIND, workers=workers,
                                burst_replicas=burst_replicas)
