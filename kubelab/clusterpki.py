"""The cluster's own PKI, as ``kubeadm init phase certs`` lays it out, and a client certificate per identity.

Under ``<data-dir>/pki`` (kubeadm's ``/etc/kubernetes/pki``):

* ``ca.crt``/``ca.key`` — the cluster CA (``kubernetes``): it signs the apiserver's serving certificate and every
  client certificate, and is the apiserver's ``--client-ca-file``;
* ``apiserver.crt`` — serving, CN ``kube-apiserver``, SANs: ``kubernetes``, ``kubernetes.default``,
  ``kubernetes.default.svc``, ``kubernetes.default.svc.cluster.local``, ``localhost``, the host name, ``127.0.0.1``
  and the ``kubernetes`` Service's ClusterIP — so in-cluster clients and kubectl on the host both verify it;
* ``sa.key``/``sa.pub`` — the service-account token signing pair (ECDSA P-256: ES256 tokens);
* ``apiserver-kubelet-client.crt`` — the client certificate the apiserver presents to the kubelets (CN
  ``kube-apiserver-kubelet-client``; ``kubelab up`` binds it to ``system:kubelet-api-admin``);
* ``kubelets/<node>.crt`` — each kubelet's serving certificate (CN ``system:node:<name>``, O ``system:nodes``,
  the node's name and addresses as SANs), which the apiserver verifies with the cluster CA;
* ``clients/<file>.crt`` — one client certificate per identity (CN the user, O the groups, as kube's x509
  authenticator reads them): ``admin`` (``kubernetes-admin`` in ``system:masters``), ``controller-manager``
  (``system:kube-controller-manager``), ``scheduler`` (``system:kube-scheduler``) and each kubelet
  (``system:node:<name>`` in ``system:nodes``).

The kubeconfig each identity uses is written by ``kubelab.kubeconfig``. This PKI is separate from etcd's
(``kubelab.etcdpki``): a certificate for the apiserver's users never opens etcd.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from kubelab.pki import CertificateAuthority, KeyPair, ensure_signing_key_pair

__all__ = ["ADMIN", "APISERVER_KUBELET_CLIENT", "CONSOLE", "CONTROLLER_MANAGER", "DNS", "HOLLOW_NODES", "KUBE_PROXY",
           "LOCAL_PATH_PROVISIONER", "SCHEDULER", "ClusterPKI", "Identity", "apiserver_sans", "kubelet_identity",
           "make_cluster_pki"]

KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of the service range (apiserver.registry.services)
SERVICE_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class Identity:
    """Who a client certificate says its holder is: kube's user (CN) and groups (O)."""

    file: str  # clients/<file>.crt and .key
    user: str
    groups: tuple[str, ...] = ()


ADMIN = Identity("admin", "kubernetes-admin", ("system:masters",))
CONTROLLER_MANAGER = Identity("controller-manager", "system:kube-controller-manager")
SCHEDULER = Identity("scheduler", "system:kube-scheduler")
# The local-path provisioner every kubelet runs (kubelab.addons grants its rights; kind runs it as a pod).
LOCAL_PATH_PROVISIONER = Identity("local-path-provisioner", "kubelab:local-path-provisioner")
# The cluster DNS (kubelab.addons grants kubeadm's CoreDNS rights; kubeadm runs it as the coredns service account).
DNS = Identity("dns", "system:coredns")
KUBE_PROXY = Identity("kube-proxy", "system:kube-proxy")  # bound to system:node-proxier
# The web console (kubelab ui): a client like the others, with the read-only rights kubelab.addons grants it.
CONSOLE = Identity("console", "kubelab:console")
# kubemark's hollow nodes run many Nodes in one process with one credential: a simulation for benchmarks, so it
# gets the rights of all of them at once (no Node authorizer confinement applies to it).
HOLLOW_NODES = Identity("kubelet-hollow", "kubelab:hollow-nodes", ("system:masters",))


# The apiserver as the kubelets' client (kubeadm's apiserver-kubelet-client.crt, in the PKI's root as kubeadm has it).
APISERVER_KUBELET_CLIENT = Identity("apiserver-kubelet-client", "kube-apiserver-kubelet-client")


def kubelet_identity(node: str) -> Identity:
    """``system:node:<name>`` in ``system:nodes``: the identity the Node authorizer recognises."""
    return Identity(f"kubelet-{node}", f"system:node:{node}", ("system:nodes",))


def apiserver_sans(service_ip: str = KUBERNETES_SERVICE_IP) -> list[str]:
    """kubeadm's apiserver SANs for a single local control plane."""
    host = socket.gethostname()
    return [*SERVICE_NAMES, "localhost", *([host] if host and host != "localhost" else []), "127.0.0.1", service_ip]


@dataclass(frozen=True)
class ClusterPKI:
    """The files the apiserver serves and authenticates with, and the CA that signs clients."""

    ca: CertificateAuthority
    apiserver: KeyPair
    sa_key: Path
    sa_pub: Path

    @property
    def ca_cert(self) -> Path:
        return self.ca.pair.cert

    def client(self, identity: Identity) -> KeyPair:
        """The identity's client certificate (made, or reused while it fits)."""
        return self.ca.issue(self.ca.pair.cert.parent / "clients" / identity.file, identity.user,
                             organizations=identity.groups, client=True)

    def apiserver_flags(self) -> list[str]:
        """kube-apiserver's flags for this PKI."""
        return ["--tls-cert-file", str(self.apiserver.cert), "--tls-private-key-file", str(self.apiserver.key),
                "--client-ca-file", str(self.ca_cert)]

    def kubelet_client(self) -> KeyPair:
        """The apiserver's client certificate for the kubelets."""
        return self.ca.issue(self.ca.pair.cert.parent / APISERVER_KUBELET_CLIENT.file, APISERVER_KUBELET_CLIENT.user,
                             client=True)

    def kubelet_client_flags(self) -> list[str]:
        """kube-apiserver's flags to reach the kubelets: its client certificate. As kubeadm, no
        ``--kubelet-certificate-authority``: a kubelet that joined (``kubelab join``) serves a self-signed
        certificate, which the apiserver would then refuse for logs, exec and metrics."""
        pair = self.kubelet_client()
        return ["--kubelet-client-certificate", str(pair.cert), "--kubelet-client-key", str(pair.key)]

    def kubelet_serving(self, node: str, addresses: list[str]) -> KeyPair:
        """A kubelet's serving certificate, for its node name and addresses (what the apiserver dials)."""
        identity = kubelet_identity(node)
        return self.ca.issue(self.ca.pair.cert.parent / "kubelets" / node, identity.user,
                             organizations=identity.groups, sans=[node, *addresses], server=True)

    def kubelet_flags(self, node: str, addresses: list[str]) -> list[str]:
        """A kubelet's serving and access flags as kubeadm configures them: the CA-signed serving certificate,
        client certificates of the cluster CA, webhook token authentication and authorization, no anonymous."""
        serving = self.kubelet_serving(node, addresses)
        return ["--tls-cert-file", str(serving.cert), "--tls-private-key-file", str(serving.key),
                "--client-ca-file", str(self.ca_cert), "--anonymous-auth=false", "--authentication-token-webhook",
                "--authorization-mode", "Webhook"]

    def signing_flags(self) -> list[str]:
        """kube-controller-manager's flags for the CSR signer: the cluster CA signs the certificates it issues."""
        return ["--cluster-signing-cert-file", str(self.ca_cert), "--cluster-signing-key-file", str(self.ca.pair.key)]

    def service_account_flags(self) -> list[str]:
        """kube-apiserver's service-account token flags for the key pair (for the token authenticator)."""
        return ["--service-account-key-file", str(self.sa_pub), "--service-account-signing-key-file", str(self.sa_key)]


def make_cluster_pki(pki_dir: Path, service_ip: str = KUBERNETES_SERVICE_IP) -> ClusterPKI:
    """Create (or reuse) the cluster CA, the apiserver's serving certificate and the service-account keys."""
    ca = CertificateAuthority.load_or_create(pki_dir / "ca", "kubernetes")
    serving = ca.issue(pki_dir / "apiserver", "kube-apiserver", sans=apiserver_sans(service_ip), server=True)
    ensure_signing_key_pair(pki_dir / "sa.key", pki_dir / "sa.pub")
    return ClusterPKI(ca, serving, pki_dir / "sa.key", pki_dir / "sa.pub")
