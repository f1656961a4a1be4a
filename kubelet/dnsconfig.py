"""A pod's resolver configuration, as kube's kubelet forms it (``pkg/kubelet/network/dns``): what the runtime writes
into the sandbox's ``/etc/resolv.conf``.

By ``dnsPolicy``:

* ``ClusterFirst`` (the default): ``nameserver`` the ``--cluster-dns`` addresses, ``search <ns>.svc.<domain>
  svc.<domain> <domain>`` and the host's search domains, ``options ndots:5``. A ``hostNetwork`` pod falls back to
  ``Default``, as kube's does; without ``--cluster-dns`` so does every pod, with a ``MissingClusterDNS`` warning.
* ``ClusterFirstWithHostNet``: ``ClusterFirst`` also for ``hostNetwork`` pods.
* ``Default``: the host's resolver configuration (``--resolv-conf``, ``/etc/resolv.conf``; an empty
  ``--resolv-conf`` means ``nameserver 127.0.0.1``, ``search .``).
* ``None``: nothing but ``dnsConfig``.

``dnsConfig`` is then merged in: nameservers and searches appended without duplicates, options by name (the pod's
win). Finally the limits: 3 nameservers, 32 search domains of at most 253 characters and 2048 characters in all,
each cut reported as kube does (a ``DNSConfigForming`` warning naming the line applied).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DNSConfig", "ResolverSettings", "parse_resolv_conf", "pod_dns"]

MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32  # ExpandedDNSConfig (GA in 1.28)
MAX_SEARCH_CHARS = 2048
MAX_SEARCH_LENGTH = 253  # DNS1123SubdomainMaxLength
DEFAULT_OPTIONS = ("ndots:5",)

Warn = Callable[[str, str], None]  # (reason, message): a Warning event about the pod


@dataclass(frozen=True)
class ResolverSettings:
    """The kubelet's flags: ``--cluster-dns``, ``--cluster-domain``, ``--resolv-conf``."""

    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    resolv_conf: str = "/etc/resolv.conf"


@dataclass
class DNSConfig:
    """The CRI's DNSConfig: what a sandbox's resolv.conf says."""

    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The resolv.conf text, in the order containerd writes it."""
        lines = [f"search {' '.join(self.searches)}"] if self.searches else []
        lines += [f"nameserver {server}" for server in self.servers]
        lines += [f"options {' '.join(self.options)}"] if self.options else []
        return "\n".join(lines) + "\n" if lines else ""


def parse_resolv_conf(text: str) -> DNSConfig:
    """Nameservers accumulate; the last ``search`` and ``options`` lines win; comments are skipped."""
    config = DNSConfig()
    for line in text.splitlines():
        fields = line.strip().split()
        if not fields or fields[0].startswith(("#", ";")):
            continue
        if fields[0] == "nameserver" and len(fields) >= 2:
            config.servers.append(fields[1])
        elif fields[0] == "search":
            config.searches = [s.removesuffix(".") for s in fields[1:]]
        elif fields[0] == "options":
            config.options = fields[1:]
    return config


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _host(settings: ResolverSettings) -> DNSConfig:
    if not settings.resolv_conf:
        return DNSConfig()
    try:
        return parse_resolv_conf(Path(settings.resolv_conf).read_text())
    except OSError:
        return DNSConfig()


def _merge_options(existing: list[str], pod_options: list[dict[str, Any]]) -> list[str]:
    """By name, the pod's ``dnsConfig.options`` overriding (``name`` or ``name:value``)."""
    merged: dict[str, str] = {}
    for option in existing:
        name, _, value = option.partition(":")
        merged[name] = value
    for pod_option in pod_options:
        merged[str(pod_option.get("name", ""))] = str(pod_option.get("value") or "")
    return [f"{name}:{value}" if value else name for name, value in merged.items()]


def _policy(spec: dict[str, Any]) -> str:
    """``cluster``, ``host`` or ``none`` (``getPodDNSType``)."""
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "None":
        return "none"
    if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not spec.get("hostNetwork")):
        return "cluster"
    return "host"


def _fit_searches(searches: list[str], warn: Warn) -> list[str]:
    exceeded = len(searches) > MAX_SEARCH_PATHS
    fitted = [s for s in searches[:MAX_SEARCH_PATHS] if len(s) <= MAX_SEARCH_LENGTH]
    exceeded = exceeded or len(fitted) < len(searches[:MAX_SEARCH_PATHS])
    while len(" ".join(fitted)) > MAX_SEARCH_CHARS:
        fitted.pop()
        exceeded = True
    if exceeded:
        warn("DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied "
             f"search line is: {' '.join(fitted)}")
    return fitted


def _fit_nameservers(servers: list[str], warn: Warn) -> list[str]:
    if len(servers) <= MAX_NAMESERVERS:
        return servers
    fitted = servers[:MAX_NAMESERVERS]
    warn("DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
         f"nameserver line is: {' '.join(fitted)}")
    return fitted


def pod_dns(settings: ResolverSettings, pod: dict[str, Any], warn: Warn) -> DNSConfig:
    """The pod's resolver configuration (``GetPodDNS``); ``warn`` records the events kube's kubelet would."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    policy = _policy(spec)
    config = _host(settings)
    if policy == "none":
        config = DNSConfig()
    elif policy == "cluster" and settings.cluster_dns:
        domain = settings.cluster_domain
        cluster = [f"{meta.get('namespace', 'default')}.svc.{domain}", f"svc.{domain}", domain] if domain else []
        config = DNSConfig(list(settings.cluster_dns), _unique([*cluster, *config.searches]), list(DEFAULT_OPTIONS))
    else:
        if policy == "cluster":
            warn("MissingClusterDNS", f'pod: "{meta.get("name")}_{meta.get("namespace")}({meta.get("uid")})". '
                 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. '
                 'Falling back to "Default" policy.')
        if not settings.resolv_conf:
            config = DNSConfig(["127.0.0.1"], ["."], [])
    extra = spec.get("dnsConfig")
    if extra:
        config.servers = _unique([*config.servers, *(extra.get("nameservers") or [])])
        config.searches = _unique([*config.searches, *(extra.get("searches") or [])])
        config.options = _merge_options(config.options, extra.get("options") or [])
    config.servers = _fit_nameservers(config.servers, warn)
    config.searches = _fit_searches(config.searches, warn)
    return config
