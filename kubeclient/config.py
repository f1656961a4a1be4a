"""Where the server is and how to authenticate: ``--master`` URL or a kubeconfig, as clientcmd resolves them.

``build_config(master=..., kubeconfig=...)`` follows ``clientcmd.BuildConfigFromFlags``: the kubeconfig's
current context gives server and credentials, and ``--master`` overrides the server.  Without either it reads
``$KUBECONFIG`` (first file) or ``~/.kube/config``.  Relative file paths inside a kubeconfig are resolved
against the kubeconfig's directory, as kubectl does.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """The kubeconfig is missing, malformed, or names a context/cluster/user that is not in it."""


@dataclass(frozen=True, slots=True)
class Config:
    """Everything ``RESTClient`` needs to reach one apiserver."""

    host: str
    token: str | None = None
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None
    insecure_skip_tls_verify: bool = False
    user_agent: str = "kubelab"
    # Act as another user (kubeconfig's ``as``/``as-groups``; client-go's ``rest.Config.Impersonate``): sent as
    # ``Impersonate-User``/``Impersonate-Group`` and checked by the apiserver against the ``impersonate`` verb.
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for an ``https`` host (None for plain ``http``)."""
        if not self.host.startswith("https://"):
            return None
        if self.ca_file or self.ca_data:
            # As client-go: a kubeconfig's CA replaces the system's roots (it is not added to them). Loading the
            # system's store also cost 0.2-0.6 s of CPU per context, and a controller-manager makes ~30 clients.
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(cafile=self.ca_file, cadata=self.ca_data.decode() if self.ca_data else None)
        else:
            ctx = ssl.create_default_context()
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file or self.cert_data:
            _load_client_cert(ctx, self)
        return ctx

    def unverified_ssl_context(self) -> ssl.SSLContext:
        """TLS that presents the client certificate (if any) and verifies no server certificate: how kube's
        apiserver reaches the kubelets without ``--kubelet-certificate-authority`` (a kubelet's serving certificate
        may be self-signed), and the console reads their debug pages."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file or self.cert_data:
            _load_client_cert(ctx, self)
        return ctx


def _load_client_cert(ctx: ssl.SSLContext, cfg: Config) -> None:
    """``load_cert_chain`` reads only files, so inline ``*-data`` is written to private temp files briefly."""
    tmp: list[str] = []
    try:
        cert = cfg.cert_file or _temp_file(cfg.cert_data or b"", tmp)
        key = cfg.key_file or (_temp_file(cfg.key_data, tmp) if cfg.key_data else None)
        ctx.load_cert_chain(cert, key)
    finally:
        for path in tmp:
            os.unlink(path)


def _temp_file(data: bytes, created: list[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="kubelab-", suffix=".pem")
    created.append(path)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _named(entries: list[dict[str, Any]] | None, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if entry.get("name") == name:
            return entry.get(what) or {}
    raise ConfigError(f"{what} {name!r} not found in kubeconfig")


def load_kubeconfig(path: str | os.PathLike[str], *, context: str | None = None) -> Config:
    """Read the kubeconfig at ``path`` and resolve ``context`` (default: its ``current-context``)."""
    file = Path(path).expanduser()
    try:
        doc = yaml.safe_load(file.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read kubeconfig {file}: {e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"kubeconfig {file} is not valid YAML: {e}") from e
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise ConfigError(f"kubeconfig {file} has no current-context")
    ctx = _named(doc.get("contexts"), ctx_name, "context")
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster")
    user = _named(doc.get("users"), ctx["user"], "user") if ctx.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise ConfigError(f"cluster {ctx.get('cluster')!r} in {file} has no server")
    base = file.parent

    def rel(key: str, section: dict[str, Any]) -> str | None:
        value = section.get(key)
        return str((base / value).resolve()) if value else None

    def data(key: str, section: dict[str, Any]) -> bytes | None:
        value = section.get(key)
        return base64.b64decode(value) if value else None

    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(rel("tokenFile", user) or "").read_text().strip()
    return Config(
        host=server.rstrip("/"),
        token=token,
        ca_file=rel("certificate-authority", cluster),
        ca_data=data("certificate-authority-data", cluster),
        cert_file=rel("client-certificate", user),
        cert_data=data("client-certificate-data", user),
        key_file=rel("client-key", user),
        key_data=data("client-key-data", user),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        impersonate_user=user.get("as") or None,
        impersonate_groups=tuple(user.get("as-groups") or ()),
    )


def default_kubeconfig_path() -> Path | None:
    """``$KUBECONFIG`` (its first entry) or ``~/.kube/config`` if that file exists."""
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), None)
    if first:
        return Path(first)
    home = Path.home() / ".kube" / "config"
    return home if home.exists() else None


def build_config(*, master: str | None = None, kubeconfig: str | os.PathLike[str] | None = None,
                 user_agent: str = "kubelab") -> Config:
    """The ``--master`` / ``--kubeconfig`` pair every component accepts; ``master`` wins for the server URL."""
    path = Path(kubeconfig) if kubeconfig else (None if master else default_kubeconfig_path())
    if path is not None:
        cfg = load_kubeconfig(path)
        host = master.rstrip("/") if master else cfg.host
        return replace(cfg, host=host, user_agent=user_agent)
    if not master:
        raise ConfigError("no --master and no kubeconfig (set --kubeconfig, $KUBECONFIG or ~/.kube/config)")
    return Config(host=master.rstrip("/"), user_agent=user_agent)

