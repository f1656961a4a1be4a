"""The certificates an etcd cluster and its clients need, laid out as kubeadm lays them out.

Under ``<data-dir>/pki`` (kubeadm's ``/etc/kubernetes/pki``): ``etcd/ca.crt`` (the etcd CA, which signs only
etcd's certificates, so a certificate for the apiserver's users never opens etcd), per member
``etcd/<member>/server.crt`` and ``peer.crt`` (SANs ``localhost`` and ``127.0.0.1``, server and client auth, as
kubeadm's etcd certificates), ``etcd/healthcheck-client.crt`` (what kubelab itself uses: snapshots, tests) and
``apiserver-etcd-client.crt`` (``--etcd-certfile`` of the apiserver).

Members are started with ``--client-cert-auth --trusted-ca-file`` and ``--peer-client-cert-auth
--peer-trusted-ca-file``: a process without a key signed by the etcd CA can neither read etcd nor join it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from kubelab.pki import CertificateAuthority, KeyPair

__all__ = ["ClientTLS", "EtcdPKI", "MemberTLS", "client_tls", "make_etcd_pki"]

LOOPBACK_SANS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class MemberTLS:
    """What one member serves with and trusts."""

    ca: Path
    server: KeyPair
    peer: KeyPair

    def flags(self) -> list[str]:
        return [
            "--cert-file", str(self.server.cert), "--key-file", str(self.server.key),
            "--client-cert-auth", "--trusted-ca-file", str(self.ca),
            "--peer-cert-file", str(self.peer.cert), "--peer-key-file", str(self.peer.key),
            "--peer-client-cert-auth", "--peer-trusted-ca-file", str(self.ca),
        ]  # fmt: skip


@dataclass(frozen=True)
class ClientTLS:
    """A client's view of etcd's TLS: the CA to verify members with and its own certificate."""

    ca: Path
    client: KeyPair

    def apiserver_flags(self) -> list[str]:
        """kube-apiserver's flags for this client certificate."""
        return ["--etcd-cafile", str(self.ca), "--etcd-certfile", str(self.client.cert),
                "--etcd-keyfile", str(self.client.key)]

    def ssl_context(self) -> ssl.SSLContext:
        """For httpx and other HTTPS clients of etcd."""
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.client.cert), str(self.client.key))
        return context


@dataclass(frozen=True)
class EtcdPKI:
    members: dict[str, MemberTLS]
    apiserver: ClientTLS
    healthcheck: ClientTLS


def make_etcd_pki(pki_dir: Path, member_names: list[str]) -> EtcdPKI:
    """Create (or reuse) the etcd CA and every certificate below ``pki_dir``."""
    etcd_dir = pki_dir / "etcd"
    ca = CertificateAuthority.load_or_create(etcd_dir / "ca", "etcd-ca")
    members = {}
    for name in member_names:
        server = ca.issue(etcd_dir / name / "server", name, sans=LOOPBACK_SANS, server=True, client=True)
        peer = ca.issue(etcd_dir / name / "peer", name, sans=LOOPBACK_SANS, server=True, client=True)
        members[name] = MemberTLS(ca.pair.cert, server, peer)
    apiserver = ca.issue(pki_dir / "apiserver-etcd-client", "kube-apiserver-etcd-client", client=True)
    healthcheck = ca.issue(etcd_dir / "healthcheck-client", "kube-etcd-healthcheck-client", client=True)
    return EtcdPKI(members, ClientTLS(ca.pair.cert, apiserver), ClientTLS(ca.pair.cert, healthcheck))


def client_tls(pki_dir: Path) -> ClientTLS:
    """kubelab's own client certificate of an existing PKI (``kubelab snapshot``), without making anything."""
    return ClientTLS(pki_dir / "etcd" / "ca.crt", KeyPair.at(pki_dir / "etcd" / "healthcheck-client"))
