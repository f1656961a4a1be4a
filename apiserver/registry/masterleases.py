"""Which apiservers are alive, so that ``default/kubernetes``'s Endpoints name a live one (kube-apiserver's lease
endpoint reconciler).

Each apiserver keeps the key ``/registry/masterleases/<ip>:<port>`` under an etcd lease of ``TTL`` seconds,
written again each time the bootstrap objects are checked (every 10 s), and deletes it when it stops, as kube does
with ``/masterleases/<ip>``. kube lists every live apiserver in the Endpoints, all serving one port; apiservers
sharing a kubelab etcd usually run on one host at different ports, which the ``kubernetes`` Service (one
``targetPort``) cannot name together. So the Endpoints name one live apiserver: the one started last, until its
key is gone; then the next check of another apiserver takes them over. Without leases, each apiserver would put
itself back every 10 s and two of them would take the Endpoints from each other for ever.
"""

from __future__ import annotations

import logging

from ..storage.etcd3 import EtcdStorage

log = logging.getLogger(__name__)

PREFIX = b"/registry/masterleases/"
TTL = 15  # seconds, as kube-apiserver's master leases (renewed every 10 s)


class MasterLeases:
    """This apiserver's lease (``ip:port``) and the set of live ones."""

    def __init__(self, storage: EtcdStorage, address: str) -> None:
        self.storage = storage
        self.address = address  # "<ip>:<port>", as the Endpoints name it
        self._key = PREFIX + address.encode()

    async def renew(self) -> set[str]:
        """Write this apiserver's lease again; the addresses of every live apiserver, this one included."""
        await self.storage.put_with_ttl(self._key, b"", TTL)
        kvs, _, _ = await self.storage.list(PREFIX)
        return {kv.key[len(PREFIX):].decode() for kv in kvs}

    async def release(self) -> None:
        """Say this apiserver is gone (graceful stop), so another one takes the Endpoints at its next check."""
        try:
            await self.storage.delete_key(self._key)
        except Exception as err:  # noqa: BLE001 - etcd away at shutdown: the lease runs out by itself
            log.warning("releasing the master lease %s: %s", self.address, err)
