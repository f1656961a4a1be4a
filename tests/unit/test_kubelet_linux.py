"""The linux runtime's pure parts: capabilities, users, cgroup maths and version, the cgroups a shim makes,
/etc/hosts, layer whiteouts."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from kubelet.imagearchive import apply_layer, load
from kubelet.images import ImageStore
from kubelet.runtime import cgroups, isolate
from kubelet.runtime.cri import SandboxConfig
from kubelet.runtime.linux import CAPABILITIES, DEFAULT_CAPABILITIES, capabilities, image_user, user


def test_capabilities_default_add_drop_privileged() -> None:
    assert capabilities({}) == sorted(CAPABILITIES[n] for n in DEFAULT_CAPABILITIES)
    changed = capabilities({"capabilities": {"add": ["NET_ADMIN"], "drop": ["CAP_KILL", "chown"]}})
    assert CAPABILITIES["NET_ADMIN"] in changed
    assert CAPABILITIES["KILL"] not in changed and CAPABILITIES["CHOWN"] not in changed
    assert capabilities({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}) == [10]
    assert capabilities({"privileged": True}) == sorted(CAPABILITIES.values())


def test_user_run_as_over_the_image_and_groups(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\nweb:x:101:102::/home:/bin/sh\n")
    (tmp_path / "etc" / "group").write_text("root:x:0:\nstaff:x:50:\n")
    assert image_user("web", tmp_path) == (101, 102)
    assert image_user("web:staff", tmp_path) == (101, 50)
    assert image_user("1000:1000", tmp_path) == (1000, 1000)
    assert image_user("", tmp_path) == (0, 0)
    assert user({"runAsUser": 1000}, {"fsGroup": 2000, "supplementalGroups": [5]}, (101, 102)) == \
        {"uid": 1000, "gid": 102, "groups": [5, 102, 2000]}
    assert user({"runAsUser": 0, "runAsGroup": 0}, {}, (101, 102)) == {"uid": 0, "gid": 0, "groups": [0]}


def test_cgroup_version_shares_and_weight(tmp_path: Path) -> None:
    hybrid = tmp_path / "hybrid"
    hybrid.write_text("tmpfs /sys/fs/cgroup tmpfs ro 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    unified = tmp_path / "unified"
    unified.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    assert (cgroups.version(str(hybrid)), cgroups.version(str(unified))) == (1, 2)
    assert (cgroups.shares(100), cgroups.shares(1), cgroups.shares(2000)) == (102, 2, 2048)
    assert (cgroups.weight(2), cgroups.weight(1024), cgroups.weight(262144)) == (1, 39, 10000)


def test_container_cgroups_planned_by_the_kubelet_made_by_the_shim(tmp_path: Path) -> None:
    """v1: memory and cpu hierarchies; the plan touches nothing, ``isolate.prepare`` makes the directories (the
    pod's with them) and writes the limits; memsw is skipped where the kernel has none, a refused limit fails."""
    for controller in ("memory", "cpu"):
        (tmp_path / controller).mkdir()
    groups = cgroups.Cgroups("node1", root=tmp_path)
    groups.version = 1
    resources = {"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"cpu": "100m"}}
    plan = groups.container_plan("uid1", "c1", resources)
    memory, cpu = (tmp_path / c / "kubelab" / "node1" / "poduid1" / "c1" for c in ("memory", "cpu"))
    assert [d["path"] for d in plan] == [str(memory), str(cpu)]
    assert not memory.parent.exists()  # planned only
    memory.mkdir(parents=True)
    (memory / "memory.memsw.limit_in_bytes").mkdir()  # a write the kernel refuses: no swap accounting
    isolate.prepare({"directories": [str(tmp_path / "state" / "rootfs")], "files": [str(tmp_path / "state" / "log")],
                     "cgroupLimits": plan})
    assert (memory / "memory.limit_in_bytes").read_text() == str(64 * 1024 * 1024)
    assert {f.name: f.read_text() for f in cpu.iterdir()} == {
        "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000", "cpu.shares": "102"}
    assert (tmp_path / "state" / "rootfs").is_dir() and (tmp_path / "state" / "log").read_text() == ""
    (cpu / "cpu.shares").unlink()
    (cpu / "cpu.shares").mkdir()  # a required limit refused: the container must not start without it
    with pytest.raises(OSError):
        isolate.prepare({"cgroupLimits": plan})


def test_managed_hosts_file() -> None:
    pod = {"metadata": {"name": "web-0", "namespace": "shop"},
           "spec": {"hostname": "web-0", "subdomain": "web", "hostAliases": [{"ip": "10.0.0.9", "hostnames": ["db"]}]}}
    config = SandboxConfig.from_pod(pod, "127.16.0.5")
    assert config.hostname == "web-0"
    assert "127.16.0.5\tweb-0.web.shop.svc.cluster.local\tweb-0\n" in config.hosts
    assert config.hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert config.hosts.endswith("# Entries added by HostAliases.\n10.0.0.9\tdb\n")


def _layer(entries: dict[str, bytes]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, body in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    out.seek(0)
    return out


def test_layers_with_whiteouts(tmp_path: Path) -> None:
    apply_layer(_layer({"a/keep": b"1", "a/gone": b"2", "b/x": b"3", "b/y": b"4", "c": b"5"}), tmp_path)
    apply_layer(_layer({"a/.wh.gone": b"", "b/.wh..wh..opq": b"", "b/z": b"6", "c": b"new"}), tmp_path)
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["a/keep", "b/z", "c"]
    assert (tmp_path / "c").read_bytes() == b"new"


def test_oci_layout_archive_loads_into_the_store(tmp_path: Path) -> None:
    """An OCI image layout (index.json → manifest → config and gzip layers, named by its annotation) becomes a
    tree and a manifest the image store knows by name, with the config's command, env, working dir and user."""
    def blob(tar: tarfile.TarFile, body: bytes) -> str:
        digest = hashlib.sha256(body).hexdigest()
        info = tarfile.TarInfo(f"blobs/sha256/{digest}")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
        return f"sha256:{digest}"

    archive = tmp_path / "oci.tar"
    with tarfile.open(archive, "w") as tar:
        layer = gzip.compress(_layer({"bin/hello": b"#!/bin/sh\n", "etc/motd": b"hi\n"}).getvalue())
        config = json.dumps({"config": {"Entrypoint": ["/bin/hello"], "Cmd": ["world"], "Env": ["A=b"],
                                        "WorkingDir": "/srv", "User": "7:8"}}).encode()
        manifest = json.dumps({"schemaVersion": 2, "config": {"digest": blob(tar, config)},
                               "layers": [{"digest": blob(tar, layer)}]}).encode()
        index = json.dumps({"schemaVersion": 2, "manifests": [
            {"digest": blob(tar, manifest), "annotations": {"io.containerd.image.name": "example.com/hello:2"}}]})
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index.encode()))
    assert load(archive, tmp_path / "images") == ["example.com/hello:2"]
    store = ImageStore(tmp_path / "images")
    config_of = store.config("example.com/hello:2")
    assert config_of is not None and store.present("example.com/hello:2")
    assert (config_of.entrypoint, config_of.cmd, config_of.env, config_of.working_dir, config_of.user) == \
        (["/bin/hello"], ["world"], ("A=b",), "/srv", "7:8")
    assert (Path(config_of.rootfs) / "etc" / "motd").read_text() == "hi\n"
    assert any("example.com/hello:2" in image["names"] for image in store.images())
