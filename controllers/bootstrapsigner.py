"""The bootstrap signer (``pkg/controller/bootstrap/bootstrapsigner.go``): sign ``kube-public/cluster-info``.

A joining node reads ``cluster-info`` anonymously, before it trusts anything, and needs proof that the cluster
that answered knows its token: for every bootstrap token Secret of ``kube-system`` that is valid for signing
(well-formed, unexpired, ``usage-bootstrap-signing: "true"``, see ``apimachinery.bootstraptoken``) this controller
puts ``jws-kubeconfig-<token id>``, a detached HS256 JWS of the ConfigMap's ``kubeconfig`` keyed by the token
secret, into the ConfigMap, and removes the signatures of tokens that are gone. The ConfigMap is written only when
a signature changed, appeared or went.

One key in the queue (``kube-public/cluster-info``): any change of the ConfigMap or of a token Secret enqueues it,
and ``sync`` recomputes every signature from the caches. A token that expires later enqueues it again then, so an
expired token's signature disappears even if the token cleaner is off. kube-controller-manager runs it as
``bootstrap-signer-controller`` (off by default; kubeadm turns it on).
"""

from __future__ import annotations

import copy
import datetime
import logging

from apimachinery import bootstraptoken as bt
from apimachinery.meta import Object
from controllers.support.base import Controller, unwrap
from controllers.tokencleaner import is_token_secret
from kubeclient import CONFIG_MAPS, SECRETS, Clientset, DeletedFinalStateUnknown, InformerFactory

log = logging.getLogger(__name__)

KEY = f"{bt.KUBE_PUBLIC}/{bt.CLUSTER_INFO}"


def signed_data(data: dict[str, str], tokens: list[bt.BootstrapToken]) -> dict[str, str]:
    """``data`` with exactly one ``jws-kubeconfig-<id>`` per token, each over ``data["kubeconfig"]``."""
    content = data[bt.KUBECONFIG_KEY]
    out = {k: v for k, v in data.items() if not k.startswith(bt.JWS_SIGNATURE_KEY_PREFIX)}
    for token in tokens:
        out[bt.JWS_SIGNATURE_KEY_PREFIX + token.id] = bt.compute_detached_signature(content, token.id, token.secret)
    return out


class BootstrapSigner(Controller):
    name = "bootstrap-signer-controller"

    def __init__(self, clientset: Clientset, factory: InformerFactory) -> None:
        super().__init__(workers=1)
        self.config_maps = clientset.config_maps
        self.cm_informer = factory.informer(CONFIG_MAPS)
        self.secret_informer = factory.informer(SECRETS)
        self.informers = [self.cm_informer, self.secret_informer]
        self.cm_informer.add_event_handler(self._config_map, lambda old, new: self._config_map(new), self._config_map)
        self.secret_informer.add_event_handler(self._secret, lambda old, new: self._secret(new), self._secret)

    def _config_map(self, obj: Object | DeletedFinalStateUnknown) -> None:
        meta = unwrap(obj).get("metadata") or {}
        if meta.get("namespace") == bt.KUBE_PUBLIC and meta.get("name") == bt.CLUSTER_INFO:
            self.queue.add(KEY)

    def _secret(self, obj: Object | DeletedFinalStateUnknown) -> None:
        if is_token_secret(unwrap(obj)):
            self.queue.add(KEY)

    def _signing_tokens(self) -> list[bt.BootstrapToken]:
        """The tokens valid for signing now; the queue comes back when the first of them expires."""
        tokens, now, soonest = [], datetime.datetime.now(datetime.UTC), None
        for secret in self.secret_informer.indexer.list():
            token = bt.token_secret(secret, bt.USAGE_SIGNING)
            if token is None:
                continue
            tokens.append(token)
            expires = bt.expiration(secret)
            if expires is not None and (soonest is None or expires < soonest):
                soonest = expires
        if soonest is not None:
            self.queue.add_after(KEY, max((soonest - now).total_seconds(), 0.0) + 0.1)
        return sorted(tokens, key=lambda t: t.id)

    async def sync(self, key: str) -> None:
        cm = self.cm_informer.indexer.get_by_key(KEY)
        if cm is None or bt.KUBECONFIG_KEY not in (cm.get("data") or {}):
            return
        data = signed_data(cm["data"], self._signing_tokens())
        if data == cm["data"]:
            return
        updated = copy.deepcopy(cm)
        updated["data"] = data
        await self.config_maps.update(updated)
        log.info("signed %s for %d token(s)", KEY, sum(k.startswith(bt.JWS_SIGNATURE_KEY_PREFIX) for k in data))
