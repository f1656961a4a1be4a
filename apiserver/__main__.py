"""``python -m apiserver`` / ``kubelab apiserver``: serve the Kubernetes API over etcd (kube-apiserver's flags)."""

from __future__ import annotations

import argparse
import ssl
import sys

from apimachinery.meta import parse_bool, parse_duration
from apimachinery.process import start_component

from . import kubeletclient
from .app import AuditConfig, Config, create_app
from .audit import PolicyError
from .authenticators.tokenfile import TokenFileError
from .authorizer import parse_modes
from .components import DEFAULT_CONTROLLER_MANAGER_HEALTHZ, DEFAULT_SCHEDULER_HEALTHZ
from .kubeletclient import KubeletClientConfig
from .registry.store import ETCD_MAX_REQUEST_BYTES
from .serviceaccount.config import DEFAULT_ISSUER, ServiceAccountConfig
from .serviceaccount.keys import KeyFileError
from .serving import Listener, TLSFiles, serve
from .storage.encryptionconfig import EncryptionConfigError
from .storage.etcd3 import EtcdTLS, uses_tls
from .storage.leases import DEFAULT_REUSE_SECONDS


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kubelab apiserver",
        description="The kubelab API server: Kubernetes REST, list and watch over a real etcd.",
    )
    parser.add_argument("--etcd-servers", default="http://127.0.0.1:2379",
                        help="comma-separated etcd client URLs, http:// or https:// (default: %(default)s)")
    parser.add_argument("--etcd-cafile", default=None, help="SSL Certificate Authority file used to secure etcd "
                        "communication")
    parser.add_argument("--etcd-certfile", default=None, help="SSL certification file used to secure etcd "
                        "communication")
    parser.add_argument("--etcd-keyfile", default=None, help="SSL key file used to secure etcd communication")
    parser.add_argument("--insecure-port", "--port", dest="insecure_port", type=int, default=8080,
                        help="port to serve plain HTTP on, without authentication: kube-apiserver's old insecure "
                             "port (removed in 1.24), kept for kubectl's default server; 0 turns it off "
                             "(default: %(default)s)")
    parser.add_argument("--insecure-bind-address", default=None,
                        help="address of the plain-HTTP port (default: 127.0.0.1 when serving HTTPS, else "
                             "--bind-address)")
    parser.add_argument("--secure-port", type=int, default=6443,
                        help="port to serve HTTPS on, when --tls-cert-file is given; 0 turns it off "
                             "(default: %(default)s)")
    parser.add_argument("--bind-address", default="127.0.0.1",
                        help="address to listen on (default: %(default)s)")
    parser.add_argument("--reuse-port", action="store_true",
                        help="bind the ports with SO_REUSEPORT, so several apiserver processes on one etcd serve "
                             "the same port, the kernel spreading connections among them (kubelab up --apiservers)")
    parser.add_argument("--tls-cert-file", default=None, help="the HTTPS serving certificate (PEM)")
    parser.add_argument("--tls-private-key-file", default=None, help="the key of --tls-cert-file (PEM)")
    parser.add_argument("--client-ca-file", default=None,
                        help="CA bundle: a client certificate it signed authenticates as its CN (user) and O (groups)")
    parser.add_argument("--token-auth-file", default=None, metavar="FILE",
                        help="static bearer tokens, CSV: token,user,uid[,\"group1,group2\"]")
    parser.add_argument("--anonymous-auth", type=_boolean, nargs="?", const=True, default=True, metavar="BOOL",
                        help="requests on the secure port without credentials are system:anonymous (else 401) "
                             "(default: true)")
    parser.add_argument("--enable-bootstrap-token-auth", type=_boolean, nargs="?", const=True, default=False,
                        metavar="BOOL", help="bearer tokens <id>.<secret> of the bootstrap.kubernetes.io/token "
                        "Secrets in kube-system authenticate as system:bootstrap:<id> (TLS bootstrapping; "
                        "default: false)")
    parser.add_argument("--advertise-address", default=None,
                        help="address:port advertised in /api (default: bind address and port)")
    parser.add_argument("--watch-cache-size", type=int, default=10_000,
                        help="events kept per resource for watch resumption (default: %(default)s)")
    parser.add_argument("--encryption-provider-config", default=None, metavar="FILE",
                        help="an apiserver.config.k8s.io/v1 EncryptionConfiguration: how resources (Secrets) are "
                             "encrypted at rest in etcd (default: stored as they are)")
    parser.add_argument("--etcd-compaction-interval", type=_duration, default="5m", metavar="DURATION",
                        help="how often etcd's history is compacted, keeping one interval of it (Go duration; "
                             "0 disables; default: %(default)s)")
    parser.add_argument("--etcd-max-request-bytes", type=int, default=ETCD_MAX_REQUEST_BYTES,
                        help="etcd's --max-request-bytes: an object whose stored form (with its key) is larger is "
                             "refused with 413 before it is written (default: %(default)s, etcd's default)")
    parser.add_argument("--event-ttl", type=_duration, default="1h0m0s", metavar="DURATION",
                        help="amount of time to retain events (Go duration; default: %(default)s)")
    parser.add_argument("--lease-reuse-duration-seconds", type=_lease_reuse, default=DEFAULT_REUSE_SECONDS,
                        metavar="SECONDS",
                        help="the time in seconds that each lease is reused; a lower value avoids a large number "
                             "of objects reusing the same lease (default: %(default)s)")
    parser.add_argument("--scheduler-healthz-url", default=DEFAULT_SCHEDULER_HEALTHZ,
                        help="where ComponentStatus 'scheduler' is probed (default: %(default)s)")
    parser.add_argument("--controller-manager-healthz-url", default=DEFAULT_CONTROLLER_MANAGER_HEALTHZ,
                        help="where ComponentStatus 'controller-manager' is probed (default: %(default)s)")
    accounts = parser.add_argument_group("service accounts")
    accounts.add_argument("--service-account-signing-key-file", default=None, metavar="FILE",
                          help="the PEM private key (RSA or ECDSA) that signs service-account tokens (default: a key "
                               "made at start-up, valid for this run only)")
    accounts.add_argument("--service-account-key-file", action="append", default=[], metavar="FILE",
                          help="PEM keys (public or private) that verify service-account tokens; repeatable "
                               "(default: the signing key's)")
    accounts.add_argument("--service-account-issuer", action="append", default=[], metavar="URL",
                          help="the issuer (iss) of service-account tokens; repeatable: the first signs, all are "
                               f"accepted (default: {DEFAULT_ISSUER})")
    accounts.add_argument("--api-audiences", default="", metavar="AUDIENCES",
                          help="comma-separated audiences of this API: tokens must name one (default: the issuer)")
    accounts.add_argument("--service-account-max-token-expiration", type=_duration, default=0, metavar="DURATION",
                          help="the longest token TokenRequest issues (Go duration; default: no maximum)")
    accounts.add_argument("--service-account-extend-token-expiration", type=_boolean, default=True, metavar="BOOL",
                          help="pods' projected tokens (3607 s) live a year, warning after their requested "
                               "expiration (default: %(default)s)")
    accounts.add_argument("--service-account-jwks-uri", default="", metavar="URL",
                          help="jwks_uri in /.well-known/openid-configuration (default: "
                               "https://<advertise address>/openid/v1/jwks)")
    parser.add_argument("--disable-admission-plugins", default="", metavar="PLUGINS",
                        help="comma-separated admission plugins to turn off, such as ServiceAccount (as kube's "
                             "integration tests do)")
    parser.add_argument("--authorization-mode", type=_modes, default="AlwaysAllow", metavar="MODES",
                        help="ordered comma list of authorizers: AlwaysAllow, AlwaysDeny, Node, RBAC (kubelab up "
                             "passes Node,RBAC; default: %(default)s)")
    kubelets = parser.add_argument_group("the kubelets' API (logs, exec, attach, port-forward, nodes/proxy, metrics)")
    kubelets.add_argument("--kubelet-client-certificate", default=None, metavar="FILE",
                          help="client certificate presented to the kubelets")
    kubelets.add_argument("--kubelet-client-key", default=None, metavar="FILE",
                          help="the key of --kubelet-client-certificate")
    kubelets.add_argument("--kubelet-certificate-authority", default=None, metavar="FILE",
                          help="verify the kubelets' serving certificates with this CA (default: not verified)")
    audit = parser.add_argument_group("auditing")
    audit.add_argument("--audit-policy-file", default=None, metavar="FILE",
                       help="an audit.k8s.io/v1 Policy: which requests are audited at which level (no file: none)")
    audit.add_argument("--audit-log-path", default=None, metavar="PATH",
                       help="write audit events to this file as JSON lines; '-' is stdout (no path: no audit log)")
    audit.add_argument("--audit-log-maxage", type=int, default=0, metavar="DAYS",
                       help="days to keep rotated audit log files, by the time in their name (0: no limit)")
    audit.add_argument("--audit-log-maxbackup", type=int, default=0, metavar="N",
                       help="rotated audit log files to keep (0: no limit)")
    audit.add_argument("--audit-log-maxsize", type=int, default=0, metavar="MB",
                       help="megabytes the audit log reaches before it is rotated (0: lumberjack's 100)")
    audit.add_argument("--audit-log-format", choices=("json",), default="json",
                       help="the audit log's format: json, one audit.k8s.io/v1 Event per line (legacy is not "
                            "supported)")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=1,
                        help="log verbosity: 0 warnings, 1 info, 2+ debug and access log (default: %(default)s)")
    return parser.parse_args(argv)


def _boolean(text: str) -> bool:
    try:
        return parse_bool(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def listeners(args: argparse.Namespace) -> list[Listener]:
    """The HTTPS listener (when there is a certificate and a secure port), then the plain one (unless port 0)."""
    secure = bool(args.tls_cert_file) and args.secure_port > 0
    out = []
    if secure:
        out.append(Listener(args.bind_address, args.secure_port,
                            TLSFiles(args.tls_cert_file, args.tls_private_key_file, args.client_ca_file),
                            reuse_port=args.reuse_port))
    if args.insecure_port > 0:
        out.append(Listener(args.insecure_bind_address or ("127.0.0.1" if secure else args.bind_address),
                            args.insecure_port, reuse_port=args.reuse_port))
    return out
def _modes(text: str) -> list[str]:
    try:
        return parse_modes(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _lease_reuse(text: str) -> int:
    try:
        seconds = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if seconds < 1:
        raise argparse.ArgumentTypeError("--lease-reuse-duration-seconds should be greater than 0")
    return seconds


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_component(args.verbosity)
    servers = [s.strip() for s in args.etcd_servers.split(",") if s.strip()]
    tls = EtcdTLS(args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)
    if (tls.certfile is None) != (tls.keyfile is None):
        sys.exit("kubelab apiserver: --etcd-certfile and --etcd-keyfile go together")
    try:
        uses_tls(servers, tls)
    except ValueError as err:
        sys.exit(f"kubelab apiserver: {err}")
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        sys.exit("kubelab apiserver: --tls-cert-file and --tls-private-key-file go together")
    if bool(args.kubelet_client_certificate) != bool(args.kubelet_client_key):
        sys.exit("kubelab apiserver: --kubelet-client-certificate and --kubelet-client-key go together")
    try:
        kubeletclient.configure(KubeletClientConfig(args.kubelet_client_certificate, args.kubelet_client_key,
                                                    args.kubelet_certificate_authority))
    except (OSError, ssl.SSLError) as err:
        sys.exit(f"kubelab apiserver: the kubelet client certificate: {err}")
    serving = listeners(args)
    if not serving:
        sys.exit("kubelab apiserver: nothing to serve: --insecure-port is 0 and there is no HTTPS port "
                 "(--tls-cert-file, --secure-port)")
    served_port = serving[0].port  # the secure port when there is one: what the kubernetes Service targets
    config = Config(
        etcd_servers=servers,
        etcd_tls=tls,
        advertise_address=args.advertise_address or f"{serving[0].host}:{served_port}",
        watch_cache_size=args.watch_cache_size,
        port=served_port,
        encryption_provider_config=args.encryption_provider_config,
        etcd_compaction_interval=args.etcd_compaction_interval,
        etcd_max_request_bytes=args.etcd_max_request_bytes,
        event_ttl=args.event_ttl,
        lease_reuse_duration_seconds=args.lease_reuse_duration_seconds,
        scheduler_healthz_url=args.scheduler_healthz_url,
        controller_manager_healthz_url=args.controller_manager_healthz_url,
        token_auth_file=args.token_auth_file,
        anonymous_auth=args.anonymous_auth,
        enable_bootstrap_token_auth=args.enable_bootstrap_token_auth,
        service_accounts=ServiceAccountConfig(
            signing_key_file=args.service_account_signing_key_file,
            key_files=args.service_account_key_file,
            issuers=args.service_account_issuer or [DEFAULT_ISSUER],
            api_audiences=_list(args.api_audiences),
            max_token_expiration=int(args.service_account_max_token_expiration),
            extend_token_expiration=args.service_account_extend_token_expiration,
            jwks_uri=args.service_account_jwks_uri),
        disable_admission_plugins=_list(args.disable_admission_plugins),
        authorization_modes=args.authorization_mode,
        audit=AuditConfig(args.audit_policy_file, args.audit_log_path, args.audit_log_maxage,
                          args.audit_log_maxbackup, args.audit_log_maxsize),
    )
    try:
        app = create_app(config)
    except (KeyFileError, OSError) as err:
        print(f"Error: service account keys: {err}", file=sys.stderr)
        sys.exit(1)
    except (EncryptionConfigError, TokenFileError, PolicyError) as err:
        print(f"Error: {err}", file=sys.stderr)
        sys.exit(1)
    serve(app, serving, verbosity=args.verbosity)


if __name__ == "__main__":
    main()
