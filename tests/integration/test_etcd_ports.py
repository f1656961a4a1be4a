"""A member of a new etcd cluster that cannot bind one of its ports: a clear error naming it, every member stopped.

A single member moves to other ports on its own (``EtcdServer.start``); the members of a cluster cannot, since
their peer URLs name each other's ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kubelab.etcd import find_etcd
from kubelab.etcdcluster import local_cluster


def test_a_member_whose_port_is_taken_is_named(tmp_path: Path) -> None:
    try:
        find_etcd()
    except FileNotFoundError as err:
        pytest.skip(str(err))
    cluster = local_cluster(tmp_path / "data", 3, tls=False)
    first = cluster.members[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first.peer_port))
        taken.listen()
        with pytest.raises(RuntimeError, match=rf"etcd member {first.name} could not bind its ports .* see "):
            cluster.start(timeout=20)
    assert not any(member.running() for member in cluster.members)
