"""The node IPAM controller (``pkg/controller/nodeipam``, the ``RangeAllocator``): a pod CIDR for every Node.

With ``--allocate-node-cidrs`` the ``--cluster-cidr`` is cut into subnets of ``--node-cidr-mask-size`` bits
(``CidrSet``) and each Node gets one as ``spec.podCIDR``/``spec.podCIDRs``; the kubelet hands its pods addresses
from it. As kube's range allocator:

* before the first allocation the set is rebuilt from the Nodes that already have CIDRs (a restarted or newly
  elected controller-manager never hands out a CIDR twice); a Node created with its own CIDRs has them marked too;
* subnets are handed out round-robin (the search starts after the last one given), so a CIDR freed by a deleted
  Node is not the next one handed out;
* a full range is an event ``CIDRNotAvailable`` on the Node and a retry; a failed patch releases the CIDR, is an
  event ``CIDRAssignmentFailed`` and a retry; a Node's CIDRs are freed when it is deleted;
* the apiserver keeps ``spec.podCIDRs`` immutable once set, so a Node is only ever patched from empty.
"""

from __future__ import annotations

import ipaddress
import logging

from apimachinery.errors import NotFound
from apimachinery.meta import Object
from controllers.nodelifecycle import node_ref
from controllers.support.base import Controller, unwrap
from controllers.support.podutil import meta
from kubeclient import NODES, Clientset, DeletedFinalStateUnknown, EventRecorder, InformerFactory

log = logging.getLogger(__name__)

DEFAULT_CLUSTER_CIDR = "127.16.0.0/12"
DEFAULT_NODE_CIDR_MASK_SIZE = 24
MAX_SUBNET_BITS = 16  # kube's clusterSubNetMaxDiff: at most 2^16 node subnets


class CIDRRangeFull(Exception):
    """``ErrCIDRRangeNoCIDRsRemaining``."""


class CidrSet:
    """kube's ``cidrset``: which ``/mask`` subnets of the cluster CIDR are used, handed out round-robin."""

    def __init__(self, cluster_cidr: str, mask_size: int) -> None:
        self.cluster = ipaddress.ip_network(cluster_cidr, strict=False)
        if mask_size < self.cluster.prefixlen:
            raise ValueError(f"--node-cidr-mask-size {mask_size} is smaller than the cluster CIDR's "
                             f"/{self.cluster.prefixlen}")
        if mask_size - self.cluster.prefixlen > MAX_SUBNET_BITS:
            raise ValueError(f"CIDRSet max size exceeded: --node-cidr-mask-size {mask_size} cuts "
                             f"{self.cluster} into more than 2^{MAX_SUBNET_BITS} subnets")
        self.mask_size = mask_size
        self.max = 1 << (mask_size - self.cluster.prefixlen)
        self.used: set[int] = set()
        self.next_candidate = 0

    def _subnet(self, index: int) -> str:
        size = 1 << (self.cluster.max_prefixlen - self.mask_size)
        return f"{self.cluster.network_address + index * size}/{self.mask_size}"

    def _indices(self, cidr: str) -> range:
        """The subnet indices ``cidr`` covers (raises ``ValueError`` when it is outside the cluster CIDR)."""
        net = ipaddress.ip_network(cidr, strict=False)
        if net.version != self.cluster.version or not net.subnet_of(self.cluster):  # type: ignore[arg-type]
            raise ValueError(f"cidr {cidr} is out of the range of the CIDR allocator ({self.cluster})")
        size = 1 << (self.cluster.max_prefixlen - self.mask_size)
        first = (int(net.network_address) - int(self.cluster.network_address)) // size
        last = (int(net.broadcast_address) - int(self.cluster.network_address)) // size
        return range(first, last + 1)

    def allocate_next(self) -> str:
        for i in range(self.max):
            candidate = (self.next_candidate + i) % self.max
            if candidate not in self.used:
                self.used.add(candidate)
                self.next_candidate = (candidate + 1) % self.max
                return self._subnet(candidate)
        raise CIDRRangeFull("CIDR allocation failed; there are no remaining CIDRs left to allocate in the "
                            "accepted range")

    def occupy(self, cidr: str) -> None:
        self.used.update(self._indices(cidr))

    def release(self, cidr: str) -> None:
        self.used.difference_update(self._indices(cidr))


CIDR_UPDATE_WORKERS = 30  # kube's range allocator's cidrUpdateWorkers


class NodeIpamController(Controller):
    name = "node-ipam-controller"
    queue_name = "cidrallocator_node"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, cluster_cidr: str = DEFAULT_CLUSTER_CIDR,
                 node_cidr_mask_size: int = DEFAULT_NODE_CIDR_MASK_SIZE) -> None:
        # kube's cidrUpdateWorkers: the Node patches run concurrently (one Node at a time per key, as every
        # workqueue guarantees). Allocation stays in order: ``allocate_next`` runs without an await between the
        # search and the mark, on the one event loop. One worker took ~1 s per Node on a loaded 2-core machine,
        # so 1,000 hollow Nodes waited up to ~15 minutes for their CIDRs (bench/scale.py).
        super().__init__(workers=CIDR_UPDATE_WORKERS)
        self.clientset = clientset
        self.cidrs = CidrSet(cluster_cidr, node_cidr_mask_size)
        self.recorder = EventRecorder(clientset.events, "cidrAllocator")
        self.node_informer = factory.informer(NODES)
        self.informers = [self.node_informer]
        self.node_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self._node_deleted)
        self._rebuilt = False
        self._patched: dict[str, str] = {}  # node name → CIDR patched, until the cache shows it (lagging cache)

    def _rebuild(self) -> None:
        """``NewCIDRRangeAllocator``: mark the CIDRs the Nodes already have before handing out any."""
        for node in self.node_informer.indexer.list():
            self._occupy(node)
        self._rebuilt = True

    def _occupy(self, node: Object) -> None:
        for cidr in (node.get("spec") or {}).get("podCIDRs") or []:
            try:
                self.cidrs.occupy(cidr)
            except ValueError as err:
                log.warning("node %s: %s; not tracked", meta(node).get("name"), err)

    def _node_deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """``ReleaseCIDR``: the deleted Node's CIDRs go back to the set."""
        node = unwrap(obj)
        name = meta(node).get("name", "")
        cidrs = list((node.get("spec") or {}).get("podCIDRs") or [])
        patched = self._patched.pop(name, None)
        for cidr in cidrs or ([patched] if patched else []):
            try:
                self.cidrs.release(cidr)
                log.info("released CIDR %s of deleted node %s", cidr, name)
            except ValueError:
                pass

    async def sync(self, key: str) -> None:
        """``AllocateOrOccupyCIDR``: a Node with CIDRs has them marked; one without gets the next free one."""
        if not self._rebuilt:
            self._rebuild()
        node = self.node_informer.indexer.get_by_key(key)
        if node is None or meta(node).get("deletionTimestamp"):
            return
        if (node.get("spec") or {}).get("podCIDRs"):
            self._patched.pop(key, None)
            self._occupy(node)
            return
        if key in self._patched:
            return  # patched already; the cache has not caught up
        try:
            cidr = self.cidrs.allocate_next()
        except CIDRRangeFull as err:
            self.recorder.event(node_ref(key), "Normal", "CIDRNotAvailable",
                                f"Node {key} status is now: CIDRNotAvailable")
            raise RuntimeError(f"failed to allocate cidr from cluster cidr at idx:0: {err}") from None
        try:
            await self.clientset.nodes.patch(key, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}, "strategic")
        except NotFound:
            self.cidrs.release(cidr)
            return
        except Exception:
            self.cidrs.release(cidr)
            self.recorder.event(node_ref(key), "Normal", "CIDRAssignmentFailed",
                                f"Node {key} status is now: CIDRAssignmentFailed")
            raise
        self._patched[key] = cidr
        log.info("set node %s PodCIDR to [%s]", key, cidr)
