"""The pod network of the linux runtime: CNI's ``bridge`` plugin with ``host-local`` IPAM, on a network namespace
of the cluster's own.

Topology (the role of kind's docker network, on one machine)::

    host namespace                cluster namespace ``kubelab-<hash>`` (one per cluster)
    ──────────────                ──────────────────────────────────────────────────────
    kl-<hash> 172.18.N.1/24 ◄──veth──► uplink0 172.18.N.254/24 + every node's InternalIP 172.18.N.<i>/32
                                   kl<node hash> bridge per node, the gateway 10.244.K.1/24 of its podCIDR
                                     └─ veth<uid> ◄──veth──► eth0 10.244.K.<p>/24 in the pod's namespace

* One namespace per cluster (``--cluster-network NAME``, default derived from the kubelet's data directory by
  ``kubelab up``) holds every node's bridge, so pods on every node reach each other by pod IP through it (the
  namespace forwards between the bridges). ``br_netfilter`` is on inside it, so traffic between pods of one bridge
  passes kube-proxy's rules too (a Service's reply is un-DNATed). Traffic leaving the cluster CIDR through
  ``uplink0`` is masqueraded (the bridge plugin's ``ipMasq``: table ``ip kubelab-net``), so the host answers
  pods without a route back to them.
* Each node's InternalIP is an address of the cluster namespace (not loopback: kube-proxy serves NodePorts on
  it); the kubelet serves its API on it from a socket opened inside the namespace (``serve_socket``).
* The host reaches the namespace over ``kl-<hash>``; routes to the cluster CIDR and the Service CIDR go through
  it only where the host has no route there yet (a second cluster on the machine logs that it skipped them).
  The /24 of the link is the first of 172.18.0.0/16 from the name's hash that no host address or route uses.
* Everything lives in the cluster's namespace or the host's link to it: ``ClusterNetwork.remove`` (``kubelab
  down``, the tests' teardown) deletes the namespace, which deletes the bridges, the veths and the host link (and
  the host routes with it); nothing is written into the host's own netfilter tables.

A pod: ``setup`` (CNI ADD) puts one end of a veth pair into the pause process's namespace as ``eth0`` with the
pod's IP from ``podips`` (host-local: a file per address, kept across kubelet restarts), its default route via
the bridge's gateway and ``lo`` up; the other end is a port of the node's bridge in hairpin mode (a pod reaching
itself through its Service). ``teardown`` (CNI DEL) deletes the veth pair. A restarted kubelet adopts its pods
with their namespaces and veths as they are.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import ipaddress
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from apimachinery.sysbin import find, system_binary

from .runtime.cri import SandboxConfig

if TYPE_CHECKING:
    from pyroute2 import IPRoute  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

CLUSTER_CIDR = "10.244.0.0/16"  # kind's and flannel's default, when the linux network is on
SERVICE_CIDR = "10.96.0.0/12"  # kubeadm's default (the apiserver's --service-cluster-ip-range)
LINK_SUPERNET = ipaddress.IPv4Network("172.18.0.0/16")  # kind's docker network: one /24 of it per cluster
NETNS_DIR = Path("/run/netns")
STATE_DIR = Path("/run/kubelab-net")  # per cluster network: the link's subnet, the node IPs (one file each)
UPLINK = "uplink0"
MASQ_TABLE = "kubelab-net"
CLONE_NEWNET, MS_BIND, MNT_DETACH = 0x40000000, 4096, 2
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")
P = ParamSpec("P")


def off_loop(method: Callable[P, T]) -> Callable[P, T]:
    """The method runs on a thread of its own (``in_netns`` without a namespace)."""
    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return in_netns(None, lambda: method(*args, **kwargs))
    return wrapper


def default_name(data_dir: Path) -> str:
    """The cluster network of a data directory: ``kubelab-`` and 8 hex digits (fits every interface name)."""
    return "kubelab-" + hashlib.sha1(str(data_dir.absolute()).encode()).hexdigest()[:8]


def _short(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def bridge_name(node: str) -> str:
    """The node's bridge (``cni0`` on a kind node; here one per node in one namespace, so named by node)."""
    return "kl" + _short(node)


def veth_name(pod_uid: str) -> str:
    """The bridge's end of a pod's veth pair (the bridge plugin's ``veth<random>``; here from the UID, so DEL
    finds it again after a restart)."""
    return "veth" + pod_uid.replace("-", "")[:8]


def _pyroute2() -> Any:
    """pyroute2, imported on first use: ~0.2 s of CPU that `kubelab up`'s command (which imports this module for
    ``usable`` and the network's names) pays only when it builds the network. The zygote imports it up front
    (``kubelab.zygote.PRELOAD``), so its kubelets do not pay it each."""
    import pyroute2

    return pyroute2


def usable() -> str | None:
    """Why this host cannot build the network (``None``: it can): root, network namespaces, veth, nft."""
    if os.geteuid() != 0:
        return "the kubelet does not run as root"
    nft_path = find("nft")
    if nft_path is None or subprocess.run([nft_path, "--version"], capture_output=True).returncode != 0:
        return "nft is not installed (Debian: apt-get install nftables)"
    return None


def in_netns(path: str | None, fn: Callable[[], T]) -> T:
    """Run ``fn`` on a thread of its own, inside the network namespace at ``path`` if given (setns is per
    thread). Every netlink call goes through here: pyroute2's synchronous API runs an event loop of its own,
    which it cannot do on the thread of the kubelet's running loop (the calls take milliseconds)."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            if path is not None:
                fd = os.open(path, os.O_RDONLY)
                try:
                    _check(_libc.setns(fd, CLONE_NEWNET), f"setns {path}")
                finally:
                    os.close(fd)
            result.append(fn())
        except BaseException as err:  # noqa: BLE001 - handed back to the caller's thread
            errors.append(err)
    thread = threading.Thread(target=run, name="netns")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


def _forwarding() -> None:
    """The cluster namespace routes between bridges, passes bridged traffic through netfilter (br_netfilter)
    and sends no redirects (pods of one bridge talk through its gateway too)."""
    for key, value in (("net.ipv4.ip_forward", "1"), ("net.bridge.bridge-nf-call-iptables", "1"),
                       ("net.ipv4.conf.all.send_redirects", "0")):
        with contextlib.suppress(FileNotFoundError):
            Path("/proc/sys", key.replace(".", "/")).write_text(value)


def nft(netns_path: str, script: str) -> None:
    """Apply an nft script inside the namespace, as one transaction (raises ``RuntimeError`` with nft's error)."""
    command = [system_binary("nsenter"), f"--net={netns_path}", system_binary("nft"), "-f", "-"]
    done = subprocess.run(command, input=script, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"nft: {done.stderr.strip()}")


class ClusterNetwork:
    """The cluster's network namespace and the host's link to it; ``ensure`` is idempotent (a lock file keeps
    two kubelets starting together from building it twice)."""

    def __init__(self, name: str, cluster_cidr: str = CLUSTER_CIDR, service_cidr: str = SERVICE_CIDR) -> None:
        self.name = name
        self.cluster_cidr = cluster_cidr
        self.service_cidr = service_cidr
        self.path = str(NETNS_DIR / name)
        self.state = STATE_DIR / name
        self.host_link = "kl-" + name.removeprefix("kubelab-")[:12]

    def exists(self) -> bool:
        return name_exists(self.name)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with open(STATE_DIR / f".{self.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network((self.state / "subnet").read_text().strip())

    @off_loop
    def ensure(self) -> ipaddress.IPv4Network:
        """Create the namespace (forwarding, br_netfilter, masquerade) and the host link; return the link's
        subnet."""
        with self._locked():
            if self.exists() and (self.state / "subnet").exists():
                return self.subnet()
            self.state.mkdir(parents=True, exist_ok=True)
            (self.state / "nodes").mkdir(exist_ok=True)
            if not self.exists():
                create_netns(self.name)
            in_netns(self.path, _forwarding)
            subnet = self._free_subnet()
            host, inner = subnet.network_address + 1, subnet.network_address + 254
            with _pyroute2().IPRoute() as ipr:
                with contextlib.suppress(_pyroute2().NetlinkError):
                    ipr.link("del", ifname=self.host_link)
                ipr.link("add", ifname=self.host_link, kind="veth", peer={"ifname": UPLINK, "net_ns_fd": self.path})
                index = ipr.link_lookup(ifname=self.host_link)[0]
                ipr.addr("add", index=index, address=str(host), prefixlen=subnet.prefixlen)
                ipr.link("set", index=index, state="up")

                def uplink() -> None:
                    with _pyroute2().IPRoute() as ns:
                        up = ns.link_lookup(ifname=UPLINK)[0]
                        ns.addr("add", index=up, address=str(inner), prefixlen=subnet.prefixlen)
                        ns.link("set", index=up, state="up")
                        ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
                        ns.route("add", dst="0.0.0.0/0", gateway=str(host))
                in_netns(self.path, uplink)
                for dst in (self.cluster_cidr, self.service_cidr):
                    if _routed(ipr, dst):
                        log.warning("cluster network %s: the host already routes %s (another cluster?): the host "
                                    "reaches this cluster's %s only through NodePorts", self.name, dst, dst)
                        continue
                    ipr.route("add", dst=dst, gateway=str(inner), oif=index)
            nft(self.path, f"table ip {MASQ_TABLE} {{\n chain postrouting {{\n"
                           f"  type nat hook postrouting priority srcnat; policy accept;\n"
                           f"  oifname \"{UPLINK}\" ip saddr {self.cluster_cidr} ip daddr != {self.cluster_cidr} "
                           f"masquerade\n }}\n}}\n")
            (self.state / "subnet").write_text(str(subnet))
            log.info("cluster network %s: namespace %s, host link %s %s/%d", self.name, self.path, self.host_link,
                     host, subnet.prefixlen)
            return subnet

    def _free_subnet(self) -> ipaddress.IPv4Network:
        """The first /24 of 172.18.0.0/16, from the name's hash on, that the host neither has nor routes."""
        used: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        with _pyroute2().IPRoute() as ipr:
            for addr in ipr.get_addr(family=socket.AF_INET):
                used.append(ipaddress.ip_interface(f"{addr.get_attr('IFA_ADDRESS')}/{addr['prefixlen']}").network)
            for route in ipr.get_routes(family=socket.AF_INET, table=254):
                dst = route.get_attr("RTA_DST")
                if dst:
                    used.append(ipaddress.IPv4Network(f"{dst}/{route['dst_len']}"))
        subnets = list(LINK_SUPERNET.subnets(new_prefix=24))
        start = int(_short(self.name), 16) % len(subnets)
        for i in range(len(subnets)):
            candidate = subnets[(start + i) % len(subnets)]
            if not any(candidate.overlaps(u) for u in used if u.prefixlen > 0):
                return candidate
        raise RuntimeError(f"no free /24 in {LINK_SUPERNET} for the cluster network {self.name}")

    @off_loop
    def node_ip(self, node: str) -> str:
        """The node's InternalIP on the cluster network (reserved once per node name, an address of the
        namespace's ``uplink0``)."""
        subnet = self.ensure()
        nodes = self.state / "nodes"
        with self._locked():
            for path in nodes.iterdir():
                if path.read_text().strip() == node:
                    ip = path.name
                    break
            else:
                taken = {p.name for p in nodes.iterdir()}
                ip = next(str(a) for a in list(subnet.hosts())[1:253] if str(a) not in taken)
                (nodes / ip).write_text(node)

            def add() -> None:
                with _pyroute2().IPRoute() as ns, contextlib.suppress(_pyroute2().NetlinkError):
                    ns.addr("add", index=ns.link_lookup(ifname=UPLINK)[0], address=ip, prefixlen=32)
            in_netns(self.path, add)
        return ip

    def serve_socket(self, address: str, port: int) -> socket.socket:
        """A listening TCP socket on ``address:port`` inside the namespace (the kubelet's API on its node IP)."""
        def listen() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(128)
            sock.setblocking(False)
            return sock
        return in_netns(self.path, listen)

    @off_loop
    def host_reaches(self, ip: str) -> bool:
        """Whether the host's route to ``ip`` goes over this cluster's link (not when another cluster on the
        machine had the CIDR's route first)."""
        with _pyroute2().IPRoute() as ipr:
            index = ipr.link_lookup(ifname=self.host_link)
            routes = ipr.route("get", dst=ip)
        return bool(index) and any(r.get_attr("RTA_OIF") == index[0] for r in routes)

    @off_loop
    def remove(self) -> None:
        """Delete the namespace (its bridges, veths, rules, the host link and its routes go with it)."""
        with self._locked():
            with _pyroute2().IPRoute() as ipr, contextlib.suppress(_pyroute2().NetlinkError):
                ipr.link("del", ifname=self.host_link)
            if self.exists():
                remove_netns(self.name)
            for path in sorted(self.state.rglob("*"), reverse=True) if self.state.exists() else []:
                path.unlink() if path.is_file() else path.rmdir()
            with contextlib.suppress(OSError):
                self.state.rmdir()


def name_exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def create_netns(name: str) -> None:
    """``ip netns add``: a new network namespace kept by a bind mount at ``/run/netns/<name>``. Done on a thread
    of its own with unshare + mount, not in a forked child: a child forked from the kubelet would share its
    asyncio signal wake-up fd, and a signal sent to that child would stop the kubelet."""
    NETNS_DIR.mkdir(parents=True, exist_ok=True)
    path = NETNS_DIR / name
    path.touch()

    def make() -> None:
        _check(_libc.unshare(CLONE_NEWNET), "unshare")
        _check(_libc.mount(b"/proc/thread-self/ns/net", str(path).encode(), b"none", MS_BIND, None),
               f"mount {path}")
    try:
        in_netns(None, make)
    except OSError:
        path.unlink(missing_ok=True)
        raise


def remove_netns(name: str) -> None:
    """``ip netns del``: unmount and unlink; the namespace goes once nothing else holds it."""
    path = NETNS_DIR / name
    _libc.umount2(str(path).encode(), MNT_DETACH)
    path.unlink(missing_ok=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _routed(ipr: IPRoute, dst: str) -> bool:
    """Whether the host's main table has a route overlapping ``dst`` (besides the default route)."""
    net = ipaddress.ip_network(dst)
    for route in ipr.get_routes(family=socket.AF_INET, table=254):
        rdst = route.get_attr("RTA_DST")
        if rdst and ipaddress.ip_network(f"{rdst}/{route['dst_len']}").overlaps(net):
            return True
    return False


class BridgeNetwork:
    """A ``PodNetwork`` (see ``runtime.linux``): the node's bridge in the cluster network, a veth per pod.

    ``pod_cidr`` answers the node's podCIDR (``podips``: it is known once the pod has an IP from it); the kubelet
    sets it once it exists."""

    isolated = True

    def __init__(self, cluster: ClusterNetwork, node: str) -> None:
        self.cluster = cluster
        self.node = node
        self.bridge = bridge_name(node)
        self.pod_cidr: Callable[[], ipaddress.IPv4Network | ipaddress.IPv6Network | None] = lambda: None

    def _bridge(self, ns: IPRoute, cidr: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
        """The node's bridge (created on the first pod) with the CIDR's gateway, the first address."""
        found = ns.link_lookup(ifname=self.bridge)
        if found:
            return int(found[0])
        ns.link("add", ifname=self.bridge, kind="bridge")
        index = int(ns.link_lookup(ifname=self.bridge)[0])
        ns.addr("add", index=index, address=str(cidr.network_address + 1), prefixlen=cidr.prefixlen)
        ns.link("set", index=index, state="up")
        return index

    @off_loop
    def setup(self, pod_uid: str, sandbox: SandboxConfig, netns_path: str | None) -> list[str]:
        """CNI ADD: the pod's ``eth0`` with its IP, the default route via the bridge's gateway, ``lo`` up."""
        cidr = self.pod_cidr()
        if netns_path is None:
            return []
        if cidr is None or ipaddress.ip_address(sandbox.pod_ip) not in cidr:
            raise RuntimeError(f"the node has no podCIDR (yet) for pod IP {sandbox.pod_ip}")
        veth = veth_name(pod_uid)
        gateway = str(cidr.network_address + 1)

        def bridge_end() -> None:
            with _pyroute2().IPRoute() as ns:
                bridge = self._bridge(ns, cidr)
                with contextlib.suppress(_pyroute2().NetlinkError):
                    ns.link("del", ifname=veth)  # a half-made pair from an earlier attempt
                fd = os.open(netns_path, os.O_RDONLY)
                try:
                    ns.link("add", ifname=veth, kind="veth", peer={"ifname": "eth0", "net_ns_fd": fd})
                finally:
                    os.close(fd)
                index = ns.link_lookup(ifname=veth)[0]
                ns.link("set", index=index, master=bridge)
                ns.brport("set", index=index, mode=1)  # IFLA_BRPORT_MODE: hairpin
                ns.link("set", index=index, state="up")

        def pod_end() -> None:
            with _pyroute2().IPRoute() as pod:
                eth0 = pod.link_lookup(ifname="eth0")[0]
                pod.addr("add", index=eth0, address=sandbox.pod_ip, prefixlen=cidr.prefixlen)
                pod.link("set", index=eth0, state="up")
                pod.link("set", index=pod.link_lookup(ifname="lo")[0], state="up")
                pod.route("add", dst="0.0.0.0/0", gateway=gateway)
        in_netns(self.cluster.path, bridge_end)
        in_netns(netns_path, pod_end)
        log.info("pod %s: eth0 %s/%d on bridge %s (gateway %s)", pod_uid, sandbox.pod_ip, cidr.prefixlen,
                 self.bridge, gateway)
        return [sandbox.pod_ip]

    @off_loop
    def teardown(self, pod_uid: str) -> None:
        """CNI DEL: the veth pair goes (idempotent: a pair already gone, or a namespace gone, is fine)."""
        if not self.cluster.exists():
            return

        def delete() -> None:
            with _pyroute2().IPRoute() as ns, contextlib.suppress(_pyroute2().NetlinkError):
                ns.link("del", ifname=veth_name(pod_uid))
        in_netns(self.cluster.path, delete)
