"""The root CA publisher (``pkg/controller/certificates/rootcacertpublisher``): ``kube-root-ca.crt`` everywhere.

Every pod's ``kube-api-access-*`` volume projects ``ca.crt`` from the ConfigMap ``kube-root-ca.crt`` of its own
namespace, so in-cluster clients can verify the apiserver. The controller-manager's ``--root-ca-file`` (else the
CA of its kubeconfig) is the bundle; without one the controller is not started.

The queue holds namespace names: a namespace added or updated, or its ``kube-root-ca.crt`` changed or deleted,
enqueues it. ``sync(namespace)`` reads the ConfigMap from the cache and creates it, or puts back ``data`` (just
``ca.crt``) and the ``kubernetes.io/description`` annotation when they differ. A create refused because the
namespace is gone or terminating is done; any other error is retried by the worker loop.
"""

from __future__ import annotations

import copy
import logging

from apimachinery.errors import AlreadyExists, Forbidden, NotFound
from apimachinery.meta import Object
from controllers.support.base import Controller, is_namespace_terminating, unwrap
from controllers.support.podutil import meta
from kubeclient import CONFIG_MAPS, NAMESPACES, Clientset, DeletedFinalStateUnknown, InformerFactory

log = logging.getLogger(__name__)

CONFIGMAP_NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    name = "root-ca-certificate-publisher-controller"
    queue_name = "root_ca_cert_publisher"

    def __init__(self, clientset: Clientset, factory: InformerFactory, root_ca: bytes, *, workers: int = 1) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.data = {"ca.crt": root_ca.decode()}
        self.ns_informer = factory.informer(NAMESPACES)
        self.cm_informer = factory.informer(CONFIG_MAPS)
        self.informers = [self.ns_informer, self.cm_informer]
        self.ns_informer.add_event_handler(self._namespace, lambda old, new: self._namespace(new))
        self.cm_informer.add_event_handler(on_update=lambda old, new: self._config_map(new),
                                           on_delete=self._config_map)

    def _namespace(self, obj: Object) -> None:
        self.queue.add(meta(obj)["name"])

    def _config_map(self, obj: Object | DeletedFinalStateUnknown) -> None:
        cm = meta(unwrap(obj))
        if cm.get("name") == CONFIGMAP_NAME and cm.get("namespace"):
            self.queue.add(cm["namespace"])

    async def sync(self, key: str) -> None:
        ns = self.ns_informer.indexer.get_by_key(key)
        if ns is None or meta(ns).get("deletionTimestamp"):
            return
        cm = self.cm_informer.indexer.get_by_key(f"{key}/{CONFIGMAP_NAME}")
        if cm is None:
            try:
                await self.clientset.config_maps.create({"metadata": {
                    "name": CONFIGMAP_NAME, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": self.data}, key)
            except (NotFound, AlreadyExists):
                return  # the namespace is gone, or the cache was behind (the update event follows)
            except Forbidden as err:
                if is_namespace_terminating(err):
                    return
                raise
            log.info("published %s in %s", CONFIGMAP_NAME, key)
            return
        if cm.get("data") == self.data and meta(cm).get("annotations", {}).get(DESCRIPTION_ANNOTATION):
            return
        updated = copy.deepcopy(cm)
        updated["data"] = self.data
        updated["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION
        await self.clientset.config_maps.update(updated)
