"""``--use-service-account-credentials``: each controller writes as its own service account, as kubeadm runs
kube-controller-manager (kube's ``clientbuilder.DynamicControllerClientBuilder``).

For a controller the manager ensures the ServiceAccount ``kube-system/<client name>`` (kube's names:
``replicaset-controller``, ``node-controller``, ``root-ca-cert-publisher`` …, which the bootstrap policy binds to
``system:controller:<client name>``), asks TokenRequest for a token and gives the controller a clientset that
sends it. The shared informers keep the manager's own identity (``system:kube-controller-manager`` may list and
watch everything), so only the controllers' writes change hands. Tokens last an hour and are requested again once
80 % of that has passed; a failed refresh is retried at the next tick while the old token still works.

Over a plain-HTTP server (the old insecure port, which authenticates nobody and ignores tokens) the controllers
impersonate their service accounts instead, so RBAC judges their writes there too: a controller that needs a verb
its kube role lacks fails the same way on either port.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time

from apimachinery.errors import AlreadyExists, StatusError
from kubeclient import Clientset
from kubeclient.config import Config
from kubeclient.rest import RESTClient

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
TOKEN_SECONDS = 3600
REFRESH_FRACTION = 0.8
TICK_SECONDS = 30.0
ACCOUNTS_AT_ONCE = 4  # accounts being made at a time (each a create and a TokenRequest)

# controller (the manager's canonical name) → kube's client / service account name
CLIENT_NAMES = {
    "replicationcontroller-controller": "replication-controller",
    "replicaset-controller": "replicaset-controller",
    "deployment-controller": "deployment-controller",
    "node-ipam-controller": "node-controller",
    "daemonset-controller": "daemon-set-controller",
    "job-controller": "job-controller",
    "cronjob-controller": "cronjob-controller",
    "ttl-after-finished-controller": "ttl-after-finished-controller",
    "node-lifecycle-controller": "node-controller",
    "taint-eviction-controller": "node-controller",
    "pod-garbage-collector-controller": "pod-garbage-collector",
    "garbage-collector-controller": "generic-garbage-collector",
    "namespace-controller": "namespace-controller",
    "serviceaccount-controller": "service-account-controller",
    "root-ca-certificate-publisher-controller": "root-ca-cert-publisher",
    "endpoints-controller": "endpoint-controller",
    "endpointslice-controller": "endpointslice-controller",
    "endpointslice-mirroring-controller": "endpointslicemirroring-controller",
    "disruption-controller": "disruption-controller",
    "resourcequota-controller": "resourcequota-controller",
    "horizontal-pod-autoscaler-controller": "horizontal-pod-autoscaler",
    "persistentvolume-binder-controller": "persistent-volume-binder",
    "persistentvolume-expander-controller": "expand-controller",
    "persistentvolumeclaim-protection-controller": "pvc-protection-controller",
    "persistentvolume-protection-controller": "pv-protection-controller",
    "clusterrole-aggregation-controller": "clusterrole-aggregation-controller",
    "certificatesigningrequest-signing-controller": "certificate-controller",
    "certificatesigningrequest-approving-controller": "certificate-controller",
    "bootstrap-signer-controller": "bootstrap-signer",
    "token-cleaner-controller": "token-cleaner",
}


@dataclasses.dataclass
class _Token:
    value: str
    refresh_at: float


class ServiceAccountCredentials:
    """Clientsets that authenticate as the controllers' service accounts, their tokens kept fresh."""

    def __init__(self, root: Clientset, config: Config) -> None:
        self.root = root  # the manager's own identity: makes the accounts and requests their tokens
        self.config = config  # the manager's connection (server, CA), which the controllers' clients reuse
        self.tokens: dict[str, _Token] = {}
        self.clientsets: list[Clientset] = []
        self._pending: dict[str, asyncio.Future[_Token]] = {}
        self._slots = asyncio.Semaphore(ACCOUNTS_AT_ONCE)

    def prepare(self, controllers: list[str]) -> None:
        """Start making the controllers' service accounts and tokens, in ``controllers``' order and
        ``ACCOUNTS_AT_ONCE`` at a time: ``clientset`` then waits for its own only. All at once (~30 creates and
        TokenRequests, each a TLS handshake of its own) the first controller waited for the last account; a fresh
        cluster's Nodes wait for the node-ipam controller's podCIDRs, which the manager starts first."""
        if not self.config.host.startswith("https://"):
            return  # impersonation: nothing to make
        for controller in controllers:
            self._making(CLIENT_NAMES.get(controller, controller))

    def _making(self, name: str) -> asyncio.Future[_Token]:
        """The (memoised) making of ``name``'s account and token."""
        if name not in self._pending:
            self._pending[name] = asyncio.ensure_future(self._account_in_turn(name))
        return self._pending[name]

    async def _account_in_turn(self, name: str) -> _Token:
        async with self._slots:
            return await self._account(name)

    async def _account(self, name: str) -> _Token:
        with contextlib.suppress(AlreadyExists):
            await self.root.service_accounts.create({"metadata": {"name": name}}, NAMESPACE)
        return await self._request(name)

    async def clientset(self, controller: str) -> Clientset:
        """The clientset ``controller`` writes with (its service account made first if missing)."""
        name = CLIENT_NAMES.get(controller, controller)
        if not self.config.host.startswith("https://"):
            clientset = Clientset(RESTClient(dataclasses.replace(
                self.config, impersonate_user=f"system:serviceaccount:{NAMESPACE}:{name}",
                impersonate_groups=("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}",
                                    "system:authenticated"),
                user_agent=f"kube-controller-manager/{name}")))
            self.clientsets.append(clientset)
            return clientset
        if name not in self.tokens:
            self.tokens[name] = await self._making(name)
        config = dataclasses.replace(self.config, token=None, cert_file=None, cert_data=None, key_file=None,
                                     key_data=None, user_agent=f"kube-controller-manager/{name}")
        clientset = Clientset(RESTClient(config, token_source=lambda: self.tokens[name].value))
        self.clientsets.append(clientset)
        return clientset

    async def _request(self, name: str) -> _Token:
        answer = await self.root.service_accounts.create(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"name": name},
             "spec": {"expirationSeconds": TOKEN_SECONDS}}, NAMESPACE, subresource="token")
        return _Token(answer["status"]["token"], time.monotonic() + TOKEN_SECONDS * REFRESH_FRACTION)

    async def run(self, stop: asyncio.Event) -> None:
        """Refresh the tokens that are due until ``stop``."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), TICK_SECONDS)
            for name, token in list(self.tokens.items()):
                if time.monotonic() >= token.refresh_at and not stop.is_set():
                    try:
                        self.tokens[name] = await self._request(name)
                    except StatusError as err:
                        log.warning("refreshing the token of %s/%s failed (retried): %s", NAMESPACE, name, err)

    async def close(self) -> None:
        for pending in self._pending.values():
            pending.cancel()
        await asyncio.gather(*self._pending.values(), return_exceptions=True)
        for clientset in self.clientsets:
            await clientset.close()
