"""The token cleaner (``pkg/controller/bootstrap/tokencleaner.go``): delete bootstrap tokens once they expire.

kube-controller-manager's ``token-cleaner-controller`` (off by default; kubeadm turns it on with
``--controllers=*,bootstrapsigner,tokencleaner``) watches the Secrets of ``kube-system``. A Secret of type
``bootstrap.kubernetes.io/token`` whose ``expiration`` has passed is deleted, on the condition that it is still the
same object (a UID precondition: a token re-created under the same name is left alone); one that expires later is
looked at again when it does (``add_after``). A NotFound or Conflict from the delete is done, not an error.
"""

from __future__ import annotations

import contextlib
import datetime
import logging

from apimachinery import bootstraptoken as bt
from apimachinery.errors import Conflict, NotFound
from apimachinery.meta import Object
from controllers.support.base import Controller, unwrap
from kubeclient import SECRETS, Clientset, InformerFactory

log = logging.getLogger(__name__)


def is_token_secret(obj: Object) -> bool:
    return obj.get("type") == bt.SECRET_TYPE and (obj.get("metadata") or {}).get("namespace") == bt.KUBE_SYSTEM


class TokenCleaner(Controller):
    name = "token-cleaner-controller"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 1) -> None:
        super().__init__(workers=workers)
        self.secrets = clientset.secrets
        self.informer = factory.informer(SECRETS)
        self.informers = [self.informer]
        self.informer.add_event_handler(self._changed, lambda old, new: self._changed(new))

    def _changed(self, obj: Object) -> None:
        if is_token_secret(unwrap(obj)):
            self.enqueue(obj)

    async def sync(self, key: str) -> None:
        secret = self.informer.indexer.get_by_key(key)
        if secret is None or not is_token_secret(secret):
            return
        expires = bt.expiration(secret)
        if expires is None:
            return
        left = (expires - datetime.datetime.now(datetime.UTC)).total_seconds()
        if left > 0:
            self.enqueue_after(secret, left)
            return
        meta = secret["metadata"]
        log.info("deleting expired bootstrap token secret %s", key)
        with contextlib.suppress(NotFound, Conflict):  # already gone, or re-created under the same name
            await self.secrets.delete(meta["name"], meta["namespace"],
                                      preconditions={"uid": meta["uid"]} if meta.get("uid") else None)
