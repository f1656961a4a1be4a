"""kubelab/pki.py: a CA kept under the data dir and the leaf certificates it issues (kubeadm's shapes)."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubelab.etcdpki import make_etcd_pki
from kubelab.pki import CertificateAuthority


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_a_leaf_has_its_cn_groups_sans_and_usages(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "kubernetes")
    pair = ca.issue(tmp_path / "admin", "kubernetes-admin", organizations=["system:masters"],
                    sans=["localhost", "127.0.0.1"], server=True, client=True)
    cert = _cert(pair.cert)
    cert.verify_directly_issued_by(ca.cert)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_keys_are_0600_in_0700_dirs(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki" / "etcd" / "ca", "etcd-ca")
    pair = ca.issue(tmp_path / "pki" / "etcd" / "m" / "server", "m", server=True)
    for key in (ca.pair.key, pair.key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    for d in (tmp_path / "pki", tmp_path / "pki" / "etcd", tmp_path / "pki" / "etcd" / "m"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_certificates_are_reused_while_they_fit_and_reissued_when_not(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "ca")
    again = CertificateAuthority.load_or_create(tmp_path / "ca", "ca")
    assert again.cert == ca.cert  # the CA persists
    first = _cert(ca.issue(tmp_path / "s", "s", sans=["localhost"], server=True).cert)
    assert _cert(again.issue(tmp_path / "s", "s", sans=["localhost"], server=True).cert) == first
    other_sans = _cert(ca.issue(tmp_path / "s", "s", sans=["localhost", "::1"], server=True).cert)
    assert other_sans != first
    new_ca = CertificateAuthority.load_or_create(tmp_path / "other-ca", "ca")
    assert _cert(new_ca.issue(tmp_path / "s", "s", sans=["localhost", "::1"], server=True).cert) != other_sans


def test_the_etcd_pki_is_kubeadm_s_layout(tmp_path: Path) -> None:
    pki = make_etcd_pki(tmp_path, ["etcd-0", "etcd-1"])
    assert pki.apiserver.ca == tmp_path / "etcd" / "ca.crt"
    assert pki.apiserver.client.cert == tmp_path / "apiserver-etcd-client.crt"
    assert pki.healthcheck.client.cert == tmp_path / "etcd" / "healthcheck-client.crt"
    assert pki.members["etcd-1"].server.cert == tmp_path / "etcd" / "etcd-1" / "server.crt"
    server = _cert(pki.members["etcd-0"].server.cert)
    assert set(server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
               .get_values_for_type(x509.DNSName)) == {"localhost"}
    client = _cert(pki.apiserver.client.cert)
    assert list(client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
    flags = pki.members["etcd-0"].flags()
    assert "--client-cert-auth" in flags and "--peer-client-cert-auth" in flags
    assert flags[flags.index("--trusted-ca-file") + 1] == str(tmp_path / "etcd" / "ca.crt")
    assert pki.apiserver.apiserver_flags()[::2] == ["--etcd-cafile", "--etcd-certfile", "--etcd-keyfile"]
