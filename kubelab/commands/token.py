"""`kubelab token create|list|delete`: bootstrap tokens, as ``kubeadm token`` manages them.

A token is the Secret ``kube-system/bootstrap-token-<id>`` (``kubelab.bootstraptokens.token_secret``), made and
read through the apiserver as the cluster's admin (``<data-dir>/kubeconfig``). ``create`` prints the token, or with
``--print-join-command`` the whole `kubelab join` line for another machine: the apiserver's address, the token and
the pin of the cluster CA's public key (``discovery.ca_cert_hash``). ``list`` shows kubeadm's columns; ``delete``
takes the token id or the whole token.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from cryptography import x509

from apimachinery import bootstraptoken as bt
from apimachinery.meta import parse_duration
from kubelab.adminapi import ApiError, admin_client, answer
from kubelab.bootstraptokens import DEFAULT_GROUP, DEFAULT_TTL, DEFAULT_USAGES, token_secret
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.discovery import ca_cert_hash
from kubelab.table import format_duration, render_table

__all__ = ["add_arguments", "join_command", "run"]

SECRETS = f"/api/v1/namespaces/{bt.KUBE_SYSTEM}/secrets"
USAGES = ("signing", "authentication")


def _ttl(text: str) -> datetime.timedelta:
    try:
        return datetime.timedelta(seconds=parse_duration(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{create,list,delete}")
    create = actions.add_parser("create", help="create a bootstrap token (a Secret in kube-system)",
                                description="create a bootstrap token for `kubelab join`")
    create.add_argument("token", nargs="?", metavar="TOKEN",
                        help="the token to create, [a-z0-9]{6}.[a-z0-9]{16} (default: a random one)")
    create.add_argument("--ttl", type=_ttl, default=DEFAULT_TTL, metavar="DURATION",
                        help="how long until the token is deleted, as a Go duration (24h, 30m); 0: never "
                             "(default 24h0m0s)")
    create.add_argument("--description", default="", help="a human-friendly description of how the token is used")
    create.add_argument("--usages", default=",".join(DEFAULT_USAGES),
                        help=f"how the token may be used, among {','.join(USAGES)} (default: %(default)s)")
    create.add_argument("--groups", default=DEFAULT_GROUP,
                        help="extra groups the token authenticates as, system:bootstrappers:* (default: %(default)s)")
    create.add_argument("--print-join-command", action="store_true",
                        help="print the whole `kubelab join` command line instead of only the token")
    actions.add_parser("list", help="list the bootstrap tokens")
    delete = actions.add_parser("delete", help="delete bootstrap tokens")
    delete.add_argument("tokens", nargs="+", metavar="TOKEN", help="a token id or a whole token")
    for sub in actions.choices.values():
        sub.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")


def join_command(data_dir: Path, server: str, token: bt.BootstrapToken) -> str:
    """The `kubelab join` line for this cluster: its HTTPS endpoint, the token and the CA's public-key pin."""
    ca = x509.load_pem_x509_certificate((data_dir / "pki" / "ca.crt").read_bytes())
    return (f"kubelab join {urlsplit(server).netloc} --token {token} "
            f"--discovery-token-ca-cert-hash {ca_cert_hash(ca)}")


def _create(client: httpx.Client, args: argparse.Namespace, data_dir: Path) -> str:
    token = bt.parse_token(args.token) if args.token else bt.generate_token()
    usages = [u for u in args.usages.split(",") if u]
    unknown = [u for u in usages if u not in USAGES]
    if unknown:
        raise ApiError(f"invalid bootstrap token usage string: {unknown[0]}, valid usage options: "
                       f"{', '.join(USAGES)}")
    groups = [g for g in args.groups.split(",") if g]
    for group in groups:
        if not bt.GROUP_RE.match(group):
            raise ApiError(f"{group!r} does not match {bt.GROUP_RE.pattern[2:-2]!r}")
    answer(client.post(SECRETS, json=token_secret(token, ttl=args.ttl, description=args.description, usages=usages,
                                                  groups=groups)))
    return join_command(data_dir, str(client.base_url), token) if args.print_join_command else str(token)


def _rows(secrets: list[dict]) -> list[tuple[str, ...]]:  # type: ignore[type-arg]
    now = datetime.datetime.now(datetime.UTC)
    rows: list[tuple[str, ...]] = []
    for secret in secrets:
        token = bt.token_from_secret(secret)
        if secret.get("type") != bt.SECRET_TYPE or token is None:
            continue
        expires = bt.expiration(secret)
        if expires is None:
            ttl, when = "<forever>", "<never>"
        else:
            left = (expires - now).total_seconds()
            ttl, when = (format_duration(left) if left > 0 else "<invalid>"), expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        usages = sorted(key.removeprefix("usage-bootstrap-") for key in secret.get("data") or {}
                        if key.startswith("usage-bootstrap-") and bt.secret_data(secret, key) == "true")
        rows.append((str(token), ttl, when, ",".join(usages),
                     bt.secret_data(secret, bt.DESCRIPTION_KEY) or "<none>",
                     bt.secret_data(secret, bt.EXTRA_GROUPS_KEY)))
    return rows


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    try:
        with admin_client(data_dir) as client:
            if args.action == "create":
                print(_create(client, args, data_dir))
            elif args.action == "list":
                rows = _rows(answer(client.get(SECRETS)).get("items") or [])
                if rows:
                    print(render_table(("TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"), rows))
            else:
                for given in args.tokens:
                    token_id = given.split(".", 1)[0]
                    if not bt.TOKEN_ID_RE.match(token_id):
                        raise ApiError(f"given token didn't match pattern {bt.TOKEN_ID_RE.pattern[2:-2]!r} or "
                                       f"{bt.TOKEN_RE.pattern[2:-2]!r}")
                    answer(client.delete(f"{SECRETS}/{bt.SECRET_PREFIX}{token_id}"))
                    print(f"bootstrap token {token_id!r} deleted".replace("'", '"'))
    except (ApiError, bt.InvalidToken, httpx.HTTPError, OSError, ValueError) as err:
        print(f"kubelab token {args.action}: {err}", file=sys.stderr)
        return 1
    return 0
