"""The ``iptables-restore --noflush`` input of kube-proxy's iptables mode (``pkg/proxy/iptables/proxier.go``),
rendered from ``ServicePort``s; I/O-free, so a test reads the input it would apply.

Chains, named and hashed as kube-proxy's (``KUBE-SVC-`` + 16 base32 characters of the SHA-256 of
``ns/name:port`` + protocol; ``KUBE-SEP-`` adds the endpoint ``ip:port``)::

    nat     PREROUTING, OUTPUT → KUBE-SERVICES   a ClusterIP . proto . port → its KUBE-SVC-*; last, a node IP →
                                                 KUBE-NODEPORTS (proto . nodePort → KUBE-EXT-*)
            KUBE-SVC-*    off-cluster sources → KUBE-MARK-MASQ; with ClientIP affinity, ``-m recent --rcheck`` per
                          endpoint; then ``-m statistic --mode random --probability 1/(n-i)`` to each KUBE-SEP-*
                          (the last one unconditional), so every endpoint is chosen with 1/n
            KUBE-EXT-*    (a NodePort) KUBE-MARK-MASQ, then the KUBE-SVC-* chain
            KUBE-SEP-*    the endpoint itself as source (hairpin) → KUBE-MARK-MASQ; ``-m recent --set`` (affinity);
                          DNAT to ip:port
            POSTROUTING → KUBE-POSTROUTING   packets marked 0x4000 are masqueraded (the mark cleared first)
    filter  OUTPUT, FORWARD → KUBE-SERVICES (new connections): a ClusterIP without endpoints is rejected;
            INPUT, FORWARD → KUBE-EXTERNAL-SERVICES: so is its NodePort; FORWARD → KUBE-FORWARD: marked and
            established traffic accepted, invalid dropped

``Renderer.sync`` writes, as kube-proxy's partial syncs do, the top-level chains (KUBE-SERVICES, KUBE-NODEPORTS,
…) whole every time but a Service port's own chains only when it changed; chains of gone ones are flushed and
deleted (``-X``) in the same transaction. A full sync (the first, or after a failure) is given the tables as
``iptables-save`` prints them: it adds the jump rules from the built-in chains that are missing and deletes every
stale ``KUBE-SVC/SEP/EXT`` chain, such as a previous proxy's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .model import Endpoint, ServicePort, chain_hash

MASQ_MARK = "0x4000"
SERVICES, NODEPORTS, EXTERNAL_SERVICES = "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES"
FORWARD, MARK_MASQ, POSTROUTING = "KUBE-FORWARD", "KUBE-MARK-MASQ", "KUBE-POSTROUTING"
SERVICE_CHAIN_PREFIXES = ("KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-")


@dataclass(frozen=True)
class Jump:
    """A rule in a built-in chain that leads into one of ours (kube-proxy's ``iptablesJumpChains``)."""

    table: str
    builtin: str
    target: str
    comment: str
    match: str = ""

    def rule(self) -> str:
        """As ``iptables-save`` prints it, less the ``-A <chain>``."""
        return f'-m comment --comment "{self.comment}" {self.match + " " if self.match else ""}-j {self.target}'


NEW = "-m conntrack --ctstate NEW"
JUMPS = (
    Jump("filter", "INPUT", EXTERNAL_SERVICES, "kubernetes externally-visible service portals", NEW),
    Jump("filter", "FORWARD", EXTERNAL_SERVICES, "kubernetes externally-visible service portals", NEW),
    Jump("filter", "FORWARD", SERVICES, "kubernetes service portals", NEW),
    Jump("filter", "OUTPUT", SERVICES, "kubernetes service portals", NEW),
    Jump("filter", "FORWARD", FORWARD, "kubernetes forwarding rules"),
    Jump("nat", "OUTPUT", SERVICES, "kubernetes service portals"),
    Jump("nat", "PREROUTING", SERVICES, "kubernetes service portals"),
    Jump("nat", "POSTROUTING", POSTROUTING, "kubernetes postrouting rules"),
)
TOP_CHAINS = {"filter": (SERVICES, EXTERNAL_SERVICES, FORWARD), "nat": (SERVICES, NODEPORTS, POSTROUTING, MARK_MASQ)}
STATIC_RULES = {
    FORWARD: [
        "-m conntrack --ctstate INVALID -j DROP",
        f'-m comment --comment "kubernetes forwarding rules" -m mark --mark {MASQ_MARK}/{MASQ_MARK} -j ACCEPT',
        '-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED '
        "-j ACCEPT",
    ],
    MARK_MASQ: [f"-j MARK --or-mark {MASQ_MARK}"],
    POSTROUTING: [
        f"-m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
        f"-j MARK --xor-mark {MASQ_MARK}",
        '-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
    ],
}


def _hash(text: str) -> str:
    return chain_hash(text, 16)


def port_name(sp: ServicePort) -> str:
    """kube-proxy's ``ServicePortName.String()``: ``ns/name:port`` (``ns/name`` for an unnamed port)."""
    return f"{sp.namespace}/{sp.name}{':' + sp.port_name if sp.port_name else ''}"


def service_chain(sp: ServicePort) -> str:
    return "KUBE-SVC-" + _hash(port_name(sp) + sp.protocol.lower())


def external_chain(sp: ServicePort) -> str:
    return "KUBE-EXT-" + _hash(port_name(sp) + sp.protocol.lower())


def endpoint_chain(sp: ServicePort, ep: Endpoint) -> str:
    return "KUBE-SEP-" + _hash(port_name(sp) + sp.protocol.lower() + f"{ep.ip}:{ep.port}")


def probability(remaining: int) -> str:
    """kube-proxy's ``computeProbability``: one in ``remaining``, with ten decimals."""
    return f"{1.0 / remaining:0.10f}"


def _proto(sp: ServicePort) -> str:
    p = sp.protocol.lower()
    return f"-m {p} -p {p}"


def _comment(text: str) -> str:
    return f'-m comment --comment "{text}"' if " " in text else f"-m comment --comment {text}"


def service_rules(sp: ServicePort, cluster_cidr: str) -> dict[str, list[str]]:
    """The Service port's own nat chains (KUBE-SVC, KUBE-EXT, KUBE-SEP) with their rules; none without endpoints
    (the filter table rejects it then)."""
    if not sp.endpoints:
        return {}
    name, svc = port_name(sp), service_chain(sp)
    rules = [f"{_comment(name + ' cluster IP')} {_proto(sp)} -d {ip}/32 --dport {sp.port} ! -s {cluster_cidr} "
             f"-j {MARK_MASQ}" for ip in sp.cluster_ips]
    chains = {svc: rules}
    if sp.affinity_seconds:
        rules += [f"{_comment(f'{name} -> {ep.ip}:{ep.port}')} -m recent --name {endpoint_chain(sp, ep)} --rcheck "
                  f"--seconds {sp.affinity_seconds} --reap -j {endpoint_chain(sp, ep)}" for ep in sp.endpoints]
    count = len(sp.endpoints)
    for i, ep in enumerate(sp.endpoints):
        chain = endpoint_chain(sp, ep)
        chance = f" -m statistic --mode random --probability {probability(count - i)}" if i < count - 1 else ""
        rules.append(f"{_comment(f'{name} -> {ep.ip}:{ep.port}')}{chance} -j {chain}")
        recent = f" -m recent --name {chain} --set" if sp.affinity_seconds else ""
        chains[chain] = [f"{_comment(name)} -s {ep.ip}/32 -j {MARK_MASQ}",
                         f"{_comment(name)}{recent} {_proto(sp)} -j DNAT --to-destination {ep.ip}:{ep.port}"]
    if sp.node_port:
        chains[external_chain(sp)] = [
            f"{_comment(f'masquerade traffic for {name} external destinations')} -j {MARK_MASQ}", f"-j {svc}"]
    return chains


def top_rules(ports: Iterable[ServicePort], node_ips: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """(table, chain) → rules of the chains written whole at every sync."""
    out: dict[tuple[str, str], list[str]] = {(t, c): list(STATIC_RULES.get(c, [])) if t == "nat" or c == FORWARD
                                              else [] for t, chains in TOP_CHAINS.items() for c in chains}
    for sp in sorted(ports, key=lambda p: p.key):
        name = port_name(sp)
        for ip in sp.cluster_ips:
            if sp.endpoints:
                out["nat", SERVICES].append(f"{_comment(name + ' cluster IP')} {_proto(sp)} -d {ip}/32 "
                                            f"--dport {sp.port} -j {service_chain(sp)}")
            else:
                out["filter", SERVICES].append(f"{_comment(name + ' has no endpoints')} {_proto(sp)} -d {ip}/32 "
                                               f"--dport {sp.port} -j REJECT --reject-with icmp-port-unreachable")
        if sp.node_port and sp.endpoints:
            out["nat", NODEPORTS].append(f"{_comment(name)} {_proto(sp)} --dport {sp.node_port} "
                                         f"-j {external_chain(sp)}")
        elif sp.node_port:
            out["filter", EXTERNAL_SERVICES].append(
                f"{_comment(name + ' has no endpoints')} -m addrtype --dst-type LOCAL {_proto(sp)} "
                f"--dport {sp.node_port} -j REJECT --reject-with icmp-port-unreachable")
    last = _comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain")
    out["nat", SERVICES] += [f"{last} -d {ip}/32 -j {NODEPORTS}" for ip in sorted(node_ips)]
    return out


@dataclass(frozen=True)
class Saved:
    """What ``iptables-save`` showed of the filter and nat tables: their chains and rules (``-A`` lines)."""

    chains: frozenset[tuple[str, str]] = frozenset()  # (table, chain)
    rules: frozenset[tuple[str, str]] = frozenset()  # (table, "-A CHAIN ...")

    @classmethod
    def parse(cls, text: str) -> Saved:
        table, chains, rules = "", set(), set()
        for line in text.splitlines():
            if line.startswith("*"):
                table = line[1:].strip()
            elif line.startswith(":"):
                chains.add((table, line[1:].split()[0]))
            elif line.startswith("-A "):
                rules.add((table, line.strip()))
        return cls(frozenset(chains), frozenset(rules))

    def has(self, jump: Jump) -> bool:
        return (jump.table, f"-A {jump.builtin} {jump.rule()}") in self.rules


def cleanup(saved: Saved) -> str:
    """The input that removes every rule and chain of this mode from the tables ``saved`` shows (kube-proxy's
    ``CleanupLeftovers``, when another mode takes over); empty when there is none."""
    out: list[str] = []
    for table in TOP_CHAINS:
        ours = sorted(c for t, c in saved.chains if t == table and c.startswith("KUBE-"))
        if not ours:
            continue
        out += [f"*{table}", *(f":{c} - [0:0]" for c in ours)]
        out += [f"-D {j.builtin} {j.rule()}" for j in JUMPS if j.table == table and saved.has(j)]
        out += [*(f"-X {c}" for c in ours), "COMMIT"]
    return "\n".join(out) + "\n" if out else ""


@dataclass
class Renderer:
    """What the tables hold now (by Service port key: the port and its chains), and the input that brings them
    to a new state (see the module doc)."""

    cluster_cidr: str
    current: dict[str, tuple[ServicePort, frozenset[str]]] = field(default_factory=dict)
    synced: bool = False
    top: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # the top-level chains' rules now
    _pending: tuple[dict[str, tuple[ServicePort, frozenset[str]]], dict[tuple[str, str], list[str]]] = \
        field(default_factory=lambda: ({}, {}))

    def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str], saved: Saved | None = None) -> str:
        """The input from the current state to ``ports`` (by key) and ``node_ips``. ``saved`` (the tables now) is
        wanted for a full sync (``full``): without it no jump rule is added and no stale chain found. Call
        ``applied`` once iptables-restore took it, ``failed`` when it did not (the next sync is full); empty when
        nothing changed."""
        full = not self.synced
        old = {} if full else self.current
        changed = {k: sp for k, sp in ports.items() if full or k not in old or old[k][0] != sp}
        rendered = {k: service_rules(sp, self.cluster_cidr) for k, sp in changed.items()}
        active = {c for k, (_, chains) in old.items() if k in ports and k not in changed for c in chains}
        active |= {c for chains in rendered.values() for c in chains}
        stale = {c for k, (_, chains) in old.items() for c in chains} - active
        if saved is not None:
            stale |= {c for t, c in saved.chains if t == "nat" and c.startswith(SERVICE_CHAIN_PREFIXES)} - active
        top = top_rules(ports.values(), node_ips)
        kept = {k: v for k, v in old.items() if k in ports and k not in changed}
        self._pending = ({**kept, **{k: (changed[k], frozenset(rendered[k])) for k in changed}}, top)
        if not (full or changed or stale) and top == self.top:
            return ""
        out: list[str] = []
        for table, chains in TOP_CHAINS.items():
            out.append(f"*{table}")
            out += [f":{c} - [0:0]" for c in chains]
            own = sorted(stale) + [c for r in rendered.values() for c in r] if table == "nat" else []
            out += [f":{c} - [0:0]" for c in own]
            if saved is not None:
                out += [f"-I {j.builtin} {j.rule()}" for j in JUMPS if j.table == table and not saved.has(j)]
            out += [f"-A {c} {rule}" for c in chains for rule in top[table, c]]
            if table == "nat":
                out += [f"-A {c} {rule}" for r in rendered.values() for c, rules in r.items() for rule in rules]
                out += [f"-X {c}" for c in sorted(stale)]
            out.append("COMMIT")
        return "\n".join(out) + "\n"

    def applied(self) -> None:
        (self.current, self.top), self.synced = self._pending, True

    def failed(self) -> None:
        """iptables-restore refused the input: the next sync is a full one."""
        self.synced = False
