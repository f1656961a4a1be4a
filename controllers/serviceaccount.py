"""The service account controller (``pkg/controller/serviceaccount``): a ``default`` ServiceAccount everywhere.

Pods that name no service account get ``default`` (the apiserver's ServiceAccount admission), so every namespace
needs one.  The queue holds namespace names:

* a namespace added or updated is enqueued (the informer's initial list covers the namespaces that already
  exist when the controller starts);
* a ServiceAccount this controller ensures (``default``) being deleted enqueues its namespace, so it comes back.

``sync(namespace)`` reads both caches and creates each missing account.  It does nothing for a namespace that
is gone or not ``Active`` (a Terminating namespace is being emptied by the namespace controller), treats
``AlreadyExists`` as done (the cache was behind) and ``Forbidden`` with cause ``NamespaceTerminating`` as
nothing to do (the namespace began terminating after the cache saw it); any other error is retried by the
worker loop with the rate-limited backoff.
"""

from __future__ import annotations

import logging

from apimachinery.errors import AlreadyExists, Forbidden
from apimachinery.meta import Object
from controllers.support.base import Controller, is_namespace_terminating, unwrap
from controllers.support.podutil import meta
from kubeclient import NAMESPACES, SERVICE_ACCOUNTS, Clientset, DeletedFinalStateUnknown, InformerFactory

log = logging.getLogger(__name__)

DEFAULT_SERVICE_ACCOUNTS = ("default",)
class ServiceAccountsController(Controller):
    name = "serviceaccount-controller"
    queue_name = "serviceaccount"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *,
                 service_accounts: tuple[str, ...] = DEFAULT_SERVICE_ACCOUNTS, workers: int = 1) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.service_accounts = service_accounts
        self.ns_informer = factory.informer(NAMESPACES)
        self.sa_informer = factory.informer(SERVICE_ACCOUNTS)
        self.informers = [self.ns_informer, self.sa_informer]
        self.ns_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))
        self.sa_informer.add_event_handler(on_delete=self._service_account_deleted)

    def _service_account_deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        sa = meta(unwrap(obj))
        if sa.get("name") in self.service_accounts and sa.get("namespace"):
            self.queue.add(sa["namespace"])

    async def sync(self, key: str) -> None:
        ns = self.ns_informer.indexer.get_by_key(key)
        if ns is None or (ns.get("status") or {}).get("phase") != "Active":
            return
        for name in self.service_accounts:
            if self.sa_informer.indexer.get_by_key(f"{key}/{name}") is not None:
                continue
            if meta(ns).get("deletionTimestamp"):
                return
            try:
                await self.clientset.service_accounts.create({"metadata": {"name": name}}, key)
            except AlreadyExists:
                continue
            except Forbidden as err:
                if is_namespace_terminating(err):
                    return
                raise
            log.info("created service account %s/%s", key, name)
