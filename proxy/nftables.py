"""The nft transactions of kube-proxy's nftables mode (``pkg/proxy/nftables/proxier.go``), rendered from
``ServicePort``s; I/O-free, so a test reads the script it would apply.

The table ``ip kube-proxy`` (chain names as kube-proxy's: ``service-<hash>-ns/name/tcp/port``,
``endpoint-<hash>-ns/name/tcp/port__ip/port``, the hash keeping names unique and short)::

    nat-prerouting, nat-output   → services: ip daddr . proto . port vmap @service-ips,
                                   ip daddr @nodeport-ips → proto . port vmap @service-nodeports
    service-*                    off-cluster sources → mark-for-masquerade; with ClientIP affinity, a source in
                                   an endpoint's affinity set goes to that endpoint; numgen random mod N vmap
    external-*                   (a NodePort) mark-for-masquerade, then the service chain
    endpoint-*                   the endpoint itself as source (hairpin) → mark-for-masquerade; affinity set
                                   updated; dnat to ip:port
    masquerading (postrouting)   packets marked 0x4000 are masqueraded
    filter-forward, filter-output  a ClusterIP without endpoints is rejected (@no-endpoint-services)

``Renderer.sync`` returns one script that changes only the Service ports that changed since the last one (the
first replaces the whole table atomically).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .model import Endpoint, ServicePort, chain_hash

TABLE = "kube-proxy"
MASQ_MARK = "0x4000"

BASE = f"""table ip {TABLE} {{
 comment "rules for kube-proxy"
 map service-ips {{ type ipv4_addr . inet_proto . inet_service : verdict ; }}
 map service-nodeports {{ type inet_proto . inet_service : verdict ; }}
 map no-endpoint-services {{ type ipv4_addr . inet_proto . inet_service : verdict ; }}
 set nodeport-ips {{ type ipv4_addr ; }}
 chain mark-for-masquerade {{ meta mark set meta mark | {MASQ_MARK} ; }}
 chain masquerading {{
  type nat hook postrouting priority srcnat ; policy accept ;
  meta mark & {MASQ_MARK} == 0 return
  meta mark set meta mark ^ {MASQ_MARK}
  masquerade fully-random
 }}
 chain services {{
  ip daddr . meta l4proto . th dport vmap @service-ips
  ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
 }}
 chain nat-prerouting {{ type nat hook prerouting priority dstnat ; policy accept ; jump services ; }}
 chain nat-output {{ type nat hook output priority -100 ; policy accept ; jump services ; }}
 chain reject-chain {{ reject ; }}
 chain endpoints-check {{ ip daddr . meta l4proto . th dport vmap @no-endpoint-services ; }}
 chain filter-forward {{ type filter hook forward priority -110 ; policy accept ; ct state new jump endpoints-check ; }}
 chain filter-output {{ type filter hook output priority -110 ; policy accept ; ct state new jump endpoints-check ; }}
}}
"""


def _hash(text: str) -> str:
    return chain_hash(text, 8)


def service_chain(sp: ServicePort) -> str:
    return f"service-{_hash(sp.key)}-{sp.key}"


def external_chain(sp: ServicePort) -> str:
    return f"external-{_hash(sp.key)}-{sp.key}"


def endpoint_chain(sp: ServicePort, ep: Endpoint) -> str:
    suffix = f"{sp.key}__{ep.ip}/{ep.port}"
    return f"endpoint-{_hash(suffix)}-{suffix}"


def affinity_set(sp: ServicePort, ep: Endpoint) -> str:
    suffix = f"{sp.key}__{ep.ip}/{ep.port}"
    return f"affinity-{_hash(suffix)}-{suffix}"


@dataclass
class Rendered:
    """One Service port's share of the table: its chains with their rules, its sets, its map elements."""

    chains: dict[str, list[str]] = field(default_factory=dict)
    sets: dict[str, str] = field(default_factory=dict)  # name → definition
    elements: list[tuple[str, str, str]] = field(default_factory=list)  # (map, key, verdict)


def render(sp: ServicePort, cluster_cidr: str) -> Rendered:
    """A Service port's chains, sets and map elements."""
    out = Rendered()
    proto = sp.protocol.lower()
    if not sp.endpoints:
        out.elements += [("no-endpoint-services", f"{ip} . {proto} . {sp.port}", "goto reject-chain")
                         for ip in sp.cluster_ips]
        return out
    svc = service_chain(sp)
    rules = [f"ip daddr {ip} {proto} dport {sp.port} ip saddr != {cluster_cidr} jump mark-for-masquerade"
             for ip in sp.cluster_ips]
    if sp.affinity_seconds:
        rules += [f"ip saddr @{affinity_set(sp, ep)} goto {endpoint_chain(sp, ep)}" for ep in sp.endpoints]
    arms = ", ".join(f"{i} : goto {endpoint_chain(sp, ep)}" for i, ep in enumerate(sp.endpoints))
    rules.append(f"numgen random mod {len(sp.endpoints)} vmap {{ {arms} }}")
    out.chains[svc] = rules
    for ep in sp.endpoints:
        ep_rules = [f"ip saddr {ep.ip} jump mark-for-masquerade"]
        if sp.affinity_seconds:
            name = affinity_set(sp, ep)
            out.sets[name] = (f"{{ type ipv4_addr ; flags dynamic,timeout ; timeout {sp.affinity_seconds}s ; }}")
            ep_rules.append(f"update @{name} {{ ip saddr }}")
        ep_rules.append(f"meta l4proto {proto} dnat to {ep.ip}:{ep.port}")
        out.chains[endpoint_chain(sp, ep)] = ep_rules
    out.elements += [("service-ips", f"{ip} . {proto} . {sp.port}", f"goto {svc}") for ip in sp.cluster_ips]
    if sp.node_port:
        ext = external_chain(sp)
        out.chains[ext] = ["jump mark-for-masquerade", f"goto {svc}"]
        out.elements.append(("service-nodeports", f"{proto} . {sp.node_port}", f"goto {ext}"))
    return out


class Renderer:
    """What the table holds now, and the transaction that brings it to a new state (see the module doc)."""

    def __init__(self, cluster_cidr: str) -> None:
        self.cluster_cidr = cluster_cidr
        self.current: dict[str, tuple[ServicePort, Rendered]] = {}
        self.node_ips: tuple[str, ...] = ()
        self.synced = False

    def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str]) -> str:
        """The script from the current state to ``ports`` (by key) and ``node_ips``; empty when nothing changed.
        Call ``applied`` once nft took it (a failed script leaves the state as it was: the next sync is full)."""
        full = not self.synced
        lines: list[str] = []
        if full:
            lines += [f"add table ip {TABLE}", f"delete table ip {TABLE}", BASE]
            old: dict[str, tuple[ServicePort, Rendered]] = {}
        else:
            old = self.current
        changed = {k: sp for k, sp in ports.items() if k not in old or old[k][0] != sp}
        gone = [k for k in old if k not in ports or k in changed]
        new = {k: render(sp, self.cluster_cidr) for k, sp in changed.items()}
        t = f"ip {TABLE}"
        for k in gone:  # 1. unhook, 2. empty the old chains
            lines += [f"delete element {t} {m} {{ {key} }}" for m, key, _ in old[k][1].elements]
            lines += [f"flush chain {t} {c}" for c in old[k][1].chains]
        kept_chains = {c for r in new.values() for c in r.chains}
        kept_sets = {s for r in new.values() for s in r.sets}
        for r in new.values():  # 3. the new chains and sets, their rules
            lines += [f"add set {t} {name} {definition}" for name, definition in r.sets.items()]
            lines += [f"add chain {t} {c}" for c in r.chains]
        for r in new.values():
            lines += [f"add rule {t} {c} {rule}" for c, rules in r.chains.items() for rule in rules]
        for k in gone:  # 4. the old chains and sets nothing refers to any more
            lines += [f"delete chain {t} {c}" for c in old[k][1].chains if c not in kept_chains]
            lines += [f"delete set {t} {s}" for s in old[k][1].sets if s not in kept_sets]
        for r in new.values():  # 5. hook the new ones in
            lines += [f"add element {t} {m} {{ {key} : {verdict} }}" for m, key, verdict in r.elements]
        ips = tuple(sorted(node_ips))
        if full or ips != self.node_ips:
            lines.append(f"flush set {t} nodeport-ips")
            if ips:
                lines.append(f"add element {t} nodeport-ips {{ {', '.join(ips)} }}")
        self._pending = ({**{k: v for k, v in old.items() if k in ports}, **{k: (changed[k], new[k]) for k in new}},
                         ips)
        return "\n".join(lines) + "\n" if lines else ""

    def applied(self) -> None:
        self.current, self.node_ips = self._pending
        self.synced = True

    def failed(self) -> None:
        """nft refused the script: the next sync replaces the whole table."""
        self.synced = False
