"""kubelet.volumes: emptyDir/hostPath/configMap set-up, per-container mount links and mount-path rewriting."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from kubelet.sources import CONFIG_MAP, SECRET, volume_references
from kubelet.volumes import (
    EMPTY_DIR,
    Mounts,
    VolumeError,
    host_path,
    mount_container,
    remove_pod_volumes,
    setup_volumes,
)


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"volumes": list(volumes)}}


def test_empty_dir_is_shared_between_containers_and_removed_with_the_pod(tmp_path: Path) -> None:
    pod_dir = tmp_path / "pods" / "uid"
    volumes = setup_volumes(_pod({"name": "cache", "emptyDir": {}}), pod_dir)
    assert volumes["cache"] == pod_dir / "volumes" / EMPTY_DIR / "cache"
    assert oct(volumes["cache"].stat().st_mode & 0o777) == "0o777"
    writer = mount_container({"name": "w", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}, volumes,
                             pod_dir / "containers" / "w")
    reader = mount_container({"name": "r", "volumeMounts": [{"name": "cache", "mountPath": "/srv/in/"}]}, volumes,
                             pod_dir / "containers" / "r")
    (pod_dir / "containers" / "w" / "cache" / "f").write_text("hello")
    assert (pod_dir / "containers" / "r" / "srv" / "in" / "f").read_text() == "hello"
    assert writer.links["/cache"] == pod_dir / "containers" / "w" / "cache"
    assert reader.links["/srv/in/"] == pod_dir / "containers" / "r" / "srv" / "in"
    # idempotent: a restarted container mounts again
    mount_container({"name": "w", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}, volumes,
                    pod_dir / "containers" / "w")
    remove_pod_volumes(pod_dir)
    assert not (pod_dir / "volumes").exists()


def test_sub_path_and_unknown_volume(tmp_path: Path) -> None:
    volumes = setup_volumes(_pod({"name": "v", "emptyDir": {}}), tmp_path)
    mount_container({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/x", "subPath": "a/b"}]}, volumes,
                    tmp_path / "c")
    assert (tmp_path / "c" / "x").resolve() == (volumes["v"] / "a" / "b").resolve()
    with pytest.raises(VolumeError, match='cannot find volume "nope"'):
        mount_container({"name": "c", "volumeMounts": [{"name": "nope", "mountPath": "/y"}]}, volumes, tmp_path / "c")


def test_host_path_types(tmp_path: Path) -> None:
    made = host_path({"path": str(tmp_path / "made" / "dir"), "type": "DirectoryOrCreate"})
    assert made.is_dir()
    assert host_path({"path": str(tmp_path / "f"), "type": "FileOrCreate"}).is_file()
    assert host_path({"path": str(tmp_path / "anything"), "type": ""}) == tmp_path / "anything"
    with pytest.raises(VolumeError, match="is not a directory"):
        host_path({"path": str(tmp_path / "missing"), "type": "Directory"})
    with pytest.raises(VolumeError, match="is not a file"):
        host_path({"path": str(tmp_path), "type": "File"})
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert host_path({"path": str(sock_path), "type": "Socket"}) == sock_path
    with pytest.raises(VolumeError, match="MountVolume.SetUp failed for volume \"h\""):
        setup_volumes(_pod({"name": "h", "hostPath": {"path": str(tmp_path / "no"), "type": "Directory"}}), tmp_path)


def test_host_path_is_used_in_place_and_survives_pod_removal(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "keep").write_text("x")
    pod_dir = tmp_path / "pod"
    volumes = setup_volumes(_pod({"name": "h", "hostPath": {"path": str(shared)}}), pod_dir)
    mount_container({"name": "c", "volumeMounts": [{"name": "h", "mountPath": "/host"}]}, volumes, pod_dir / "c")
    assert (pod_dir / "c" / "host" / "keep").read_text() == "x"
    remove_pod_volumes(pod_dir)
    assert (shared / "keep").exists()


def test_config_map_volume(tmp_path: Path) -> None:
    cms = {(CONFIG_MAP, "cfg"): {"data": {"a.conf": "A", "b": "B"}, "binaryData": {"bin": "AAE="}}}
    volumes = setup_volumes(_pod({"name": "c", "configMap": {"name": "cfg", "defaultMode": 0o600}},
                                 {"name": "i", "configMap": {"name": "cfg", "items": [{"key": "b", "path": "x/b"}]}},
                                 {"name": "o", "configMap": {"name": "gone", "optional": True}}), tmp_path, cms)
    assert (volumes["c"] / "a.conf").read_text() == "A"
    assert (volumes["c"] / "bin").read_bytes() == b"\x00\x01"
    assert oct((volumes["c"] / "b").stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in volumes["i"].rglob("*") if p.is_file()] == ["b"]
    assert list(volumes["o"].iterdir()) == []
    with pytest.raises(VolumeError, match='configmap "gone" not found'):
        setup_volumes(_pod({"name": "o", "configMap": {"name": "gone"}}), tmp_path, cms)


def test_secret_volume_holds_decoded_bytes(tmp_path: Path) -> None:
    secrets = {(SECRET, "creds"): {"data": {"user": "YWRtaW4=", "key.bin": "/wA="}}}
    pod = _pod({"name": "s", "secret": {"secretName": "creds"}},
               {"name": "i", "secret": {"secretName": "creds", "defaultMode": 0o400,
                                        "items": [{"key": "user", "path": "etc/user"},
                                                  {"key": "key.bin", "path": "k", "mode": 0o600}]}},
               {"name": "o", "secret": {"secretName": "gone", "optional": True}})
    assert volume_references(pod["spec"]["volumes"]) == {(SECRET, "creds"), (SECRET, "gone")}
    volumes = setup_volumes(pod, tmp_path, secrets)
    assert volumes["s"] == tmp_path / "volumes" / "kubernetes.io~secret" / "s"
    assert (volumes["s"] / "user").read_bytes() == b"admin"
    assert (volumes["s"] / "key.bin").read_bytes() == b"\xff\x00"
    assert oct((volumes["s"] / "user").stat().st_mode & 0o777) == "0o644"
    assert oct((volumes["i"] / "etc" / "user").stat().st_mode & 0o777) == "0o400"
    assert oct((volumes["i"] / "k").stat().st_mode & 0o777) == "0o600"
    assert list(volumes["o"].iterdir()) == []
    with pytest.raises(VolumeError, match='MountVolume.SetUp failed for volume "s" : secret "gone" not found'):
        setup_volumes(_pod({"name": "s", "secret": {"secretName": "gone"}}), tmp_path, secrets)
    with pytest.raises(VolumeError, match="references non-existent secret key: nope$"):
        setup_volumes(_pod({"name": "s", "secret": {"secretName": "creds", "items": [{"key": "nope", "path": "n"}]}}),
                      tmp_path, secrets)


def test_existing_non_empty_directory_is_not_replaced(tmp_path: Path) -> None:
    volumes = setup_volumes(_pod({"name": "v", "emptyDir": {}}), tmp_path)
    (tmp_path / "c" / "data").mkdir(parents=True)
    (tmp_path / "c" / "data" / "file").write_text("mine")
    with pytest.raises(VolumeError, match="already exists"):
        mount_container({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/data"}]}, volumes, tmp_path / "c")


@pytest.mark.parametrize("text,expected", [
    ("echo hi > /data/x", "echo hi > /C/data/x"),
    ("cat /data", "cat /C/data"),
    ("X=/data;ls '/data/'", "X=/C/data;ls '/C/data/'"),
    ("/database /data2 /mnt/data ./data $HOME/data", "/database /data2 /mnt/data ./data $HOME/data"),
    ("/var/lib/app/file", "/C/var/lib/app/file"),
    ("/var/lib/other", "/var/lib/other"),
])
def test_rewrite_whole_components(text: str, expected: str) -> None:
    mounts = Mounts({"/data": Path("/C/data"), "/var/lib/app/": Path("/C/var/lib/app")})
    assert mounts.rewrite(text) == expected


def test_rewrite_container_copies() -> None:
    mounts = Mounts({"/data": Path("/C/data")})
    container = {"name": "c", "command": ["sh", "-c", "ls /data"], "args": ["/data"]}
    assert mounts.rewrite_container(container)["command"] == ["sh", "-c", "ls /C/data"]
    assert container["args"] == ["/data"]
    assert Mounts({}).rewrite("/data") == "/data"


def test_links_are_relative_to_the_container_directory(tmp_path: Path) -> None:
    volumes = setup_volumes(_pod({"name": "v", "emptyDir": {}}), tmp_path)
    mount_container({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/a/b"}]}, volumes, tmp_path / "c")
    assert os.path.islink(tmp_path / "c" / "a" / "b")
    assert not Path("/a/b").exists()
