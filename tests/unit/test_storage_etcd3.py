"""apiserver/storage/etcd3.py's connection set-up: --etcd-servers with several members, TLS or not."""

from __future__ import annotations

import pytest

from apiserver.__main__ import parse_args
from apiserver.storage.etcd3 import EtcdTLS, grpc_target, uses_tls


def test_several_members_are_one_round_robin_target() -> None:
    servers = ["https://127.0.0.1:2379", "https://127.0.0.1:22379", "https://127.0.0.1:32379"]
    assert grpc_target(servers) == "ipv4:127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379"
    assert grpc_target(["https://localhost:2379"]) == "localhost:2379"
    assert grpc_target(["https://localhost:1", "https://localhost:2"]) == "ipv4:127.0.0.1:1,127.0.0.1:2"


def test_https_means_tls_and_schemes_do_not_mix() -> None:
    assert uses_tls(["https://127.0.0.1:2379"], EtcdTLS("ca.crt", "c.crt", "c.key"))
    assert not uses_tls(["http://127.0.0.1:2379", "127.0.0.1:2380"], None)
    with pytest.raises(ValueError, match="mixes http and https"):
        uses_tls(["http://127.0.0.1:2379", "https://127.0.0.1:2380"], None)
    with pytest.raises(ValueError, match="use https:// URLs"):
        uses_tls(["http://127.0.0.1:2379"], EtcdTLS("ca.crt", None, None))


def test_kube_apiserver_s_etcd_flags() -> None:
    args = parse_args(["--etcd-servers", "https://127.0.0.1:1,https://127.0.0.1:2", "--etcd-cafile", "ca.crt",
                       "--etcd-certfile", "c.crt", "--etcd-keyfile", "c.key"])
    assert (args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile) == ("ca.crt", "c.crt", "c.key")
