"""Pod volumes for the process runtime: ``emptyDir``, ``hostPath``, ``configMap``, ``secret``, ``projected`` and
``downwardAPI``, and how containers see them.

Where the data lives (as the kubelet lays it out)::

    <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>/     an emptyDir (mode 0777), removed with the pod
    <root>/pods/<uid>/volumes/kubernetes.io~configmap/<name>/     a configMap volume (one file per key)
    <root>/pods/<uid>/volumes/kubernetes.io~secret/<name>/        a secret volume (one file per key, decoded)
    <root>/pods/<uid>/volumes/kubernetes.io~projected/<name>/     a projected volume (``projected``), written
    <root>/pods/<uid>/volumes/kubernetes.io~downward-api/<name>/  and rewritten whole by ``atomicwriter``
    <hostPath.path>                                               a hostPath, used in place (checked per ``type``)
    <the PV's hostPath.path or local.path>                        a persistentVolumeClaim: its bound volume's path

How a container sees them. A real runtime bind-mounts each volume at its ``mountPath`` inside the container's
own root filesystem; a process runtime cannot (``chroot`` and mount namespaces need privileges), and containers
share the host's filesystem, so a symlink at the absolute ``mountPath`` on the host is not acceptable. Instead
each container's directory (``<root>/pods/<uid>/containers/<name>/``) plays the container's root:

* every ``volumeMount`` becomes a symlink at ``<container dir>/<mountPath without the leading "/">`` pointing at
  the volume (or its ``subPath``), so two containers of one pod that mount the same emptyDir share its files;
* the process starts in the container directory (or ``<container dir>/<workingDir>``), so the relative form of a
  mount path (``data/x`` for ``/data/x``) reaches the volume;
* absolute mount paths written in ``command``, ``args``, ``env`` values and exec probes/hooks are rewritten to
  the container's view (``/data/x`` → ``<container dir>/data/x``) by ``Mounts.rewrite``; only whole path
  components match, so ``/database`` is untouched by a ``/data`` mount.

``readOnly`` cannot be enforced without privileges: the link is made all the same.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import atomicwriter
from .projected import DEFAULT_MODE as PROJECTED_DEFAULT_MODE
from .projected import ProjectionError, Tokens, downward_files, projected_files
from .sources import SourceKind, Sources, volume_kind

log = logging.getLogger(__name__)

EMPTY_DIR = "kubernetes.io~empty-dir"
PROJECTED = "kubernetes.io~projected"
DOWNWARD_API = "kubernetes.io~downward-api"
DEFAULT_MODE = 0o644  # ConfigMapVolumeSourceDefaultMode, SecretVolumeSourceDefaultMode


class VolumeError(Exception):
    """A volume cannot be set up (the kubelet's ``FailedMount``); retried on the next sync."""


def volumes_dir(pod_dir: Path) -> Path:
    return pod_dir / "volumes"


def setup_volumes(pod: Mapping[str, Any], pod_dir: Path, sources: Sources | None = None,
                  claims: Mapping[str, Mapping[str, Any]] | None = None, *,
                  tokens: Tokens | None = None, pod_ip: str = "", host_ip: str = "",
                  allocatable: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Set up every volume of the pod (idempotent) and return volume name → the directory or file on the host.

    ``sources`` holds the ConfigMaps and Secrets the volumes project (``sources.volume_references``,
    ``projected.projected_references``); ``claims`` the PersistentVolume behind each ``persistentVolumeClaim``
    volume (``claims.resolve_claims``); ``tokens`` the service-account tokens (``projected.token_keys``)."""
    paths: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = volume["name"]
        kind = volume_kind(volume)
        try:
            if volume.get("projected") is not None or volume.get("downwardAPI") is not None:
                paths[name] = _written_volume(pod, volume, pod_dir, sources or {}, tokens or {}, pod_ip, host_ip,
                                              allocatable or {})
            elif volume.get("hostPath") is not None:
                paths[name] = host_path(volume["hostPath"])
            elif volume.get("persistentVolumeClaim") is not None and claims and name in claims:
                paths[name] = persistent_volume_path(claims[name])
            elif kind is not None:
                target = volumes_dir(pod_dir) / kind.plugin_dir / name
                paths[name] = _projected_volume(kind, volume[kind.volume], target, sources or {})
            else:
                if volume.get("emptyDir") is None:
                    log.info("volume %s: %s is not supported by the process runtime; using an empty directory",
                             name, next(iter(k for k in volume if k != "name"), "?"))
                paths[name] = _empty_dir(volumes_dir(pod_dir) / EMPTY_DIR / name)
        except VolumeError as err:
            raise VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {err}') from None
    return paths


def refresh_written_volumes(pod: Mapping[str, Any], pod_dir: Path, sources: Sources, tokens: Tokens, *,
                            pod_ip: str = "", host_ip: str = "", allocatable: Mapping[str, str] | None = None) -> None:
    """Rewrite the projected and downwardAPI volumes with current data (refreshed tokens, changed ConfigMaps);
    the kubelet's periodic remount. Unchanged files are not touched."""
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume.get("projected") is not None or volume.get("downwardAPI") is not None:
            try:
                _written_volume(pod, volume, pod_dir, sources, tokens, pod_ip, host_ip, allocatable or {})
            except VolumeError as err:
                log.warning("volume %s not refreshed: %s", volume["name"], err)


def _written_volume(pod: Mapping[str, Any], volume: Mapping[str, Any], pod_dir: Path, sources: Sources,
                    tokens: Tokens, pod_ip: str, host_ip: str, allocatable: Mapping[str, str]) -> Path:
    """A projected or downwardAPI volume, its payload put in place by the atomic writer."""
    try:
        if volume.get("projected") is not None:
            target: Path = volumes_dir(pod_dir) / PROJECTED / volume["name"]
            payload = projected_files(pod, volume["projected"], sources, tokens, pod_ip=pod_ip, host_ip=host_ip,
                                      allocatable=allocatable)
        else:
            source = volume["downwardAPI"]
            target = volumes_dir(pod_dir) / DOWNWARD_API / volume["name"]
            payload = downward_files(pod, source.get("items") or [], source.get("defaultMode", PROJECTED_DEFAULT_MODE),
                                     pod_ip=pod_ip, host_ip=host_ip, allocatable=allocatable)
        atomicwriter.write(target, payload)
    except (ProjectionError, atomicwriter.PayloadError) as err:
        raise VolumeError(str(err)) from None
    return target


def _empty_dir(path: Path) -> Path:
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
    return path


def host_path(source: Mapping[str, Any]) -> Path:
    """``hostPath`` with its ``type`` check (``DirectoryOrCreate`` and ``FileOrCreate`` create it)."""
    path = Path(source["path"])
    kind = source.get("type") or ""
    if kind == "DirectoryOrCreate" and not path.exists():
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
    elif kind == "FileOrCreate" and not path.exists():
        try:
            path.touch(mode=0o644)
        except OSError as err:
            raise VolumeError(f"hostPath type check failed: {path} is not a file ({err.strerror})") from None
    checks = {"Directory": (stat.S_ISDIR, "a directory"), "DirectoryOrCreate": (stat.S_ISDIR, "a directory"),
              "File": (stat.S_ISREG, "a file"), "FileOrCreate": (stat.S_ISREG, "a file"),
              "Socket": (stat.S_ISSOCK, "a socket"), "CharDevice": (stat.S_ISCHR, "a character device"),
              "BlockDevice": (stat.S_ISBLK, "a block device")}
    if kind in checks:
        test, what = checks[kind]
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = 0
        if not test(mode):
            raise VolumeError(f"hostPath type check failed: {path} is not {what}")
    return path


def persistent_volume_path(volume: Mapping[str, Any]) -> Path:
    """Where a PersistentVolume's data is on this node: a ``hostPath`` (checked and created per its ``type``) or a
    ``local`` path, which must exist (as kube's local volume plugin requires); other sources need plugins this
    kubelet does not have."""
    spec = volume.get("spec") or {}
    if spec.get("hostPath") is not None:
        return host_path(spec["hostPath"])
    if spec.get("local") is not None:
        path = Path(spec["local"].get("path", ""))
        if not path.exists():
            raise VolumeError(f'path "{path}" does not exist')
        return path
    source = next((k for k in spec if k not in ("capacity", "accessModes", "claimRef", "nodeAffinity",
                                                 "persistentVolumeReclaimPolicy", "storageClassName",
                                                 "volumeMode", "mountOptions", "volumeAttributesClassName")), "?")
    raise VolumeError(f"persistent volume {volume.get('metadata', {}).get('name', '')}: {source} is not supported "
                      "by this kubelet")


def _projected_volume(kind: SourceKind, source: Mapping[str, Any], path: Path, sources: Sources) -> Path:
    """A configMap or secret volume: one file per key (or per ``items`` entry), holding the value's bytes."""
    name = source.get(kind.volume_name, "")
    obj = sources.get((kind, name))
    path.mkdir(parents=True, exist_ok=True)
    if obj is None:
        if source.get("optional"):
            return path
        raise VolumeError(kind.not_found(name))
    files = kind.file_values(obj)
    items = source.get("items") or [{"key": key, "path": key} for key in files]
    mode = source.get("defaultMode", DEFAULT_MODE)
    for item in items:
        if item["key"] not in files:
            if source.get("optional"):
                continue
            raise VolumeError(kind.missing_file_key.format(key=item["key"]))
        target = path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[item["key"]])
        target.chmod(item.get("mode", mode))
    return path


def remove_pod_volumes(pod_dir: Path) -> None:
    """Delete the pod's emptyDir, configMap and secret data (a hostPath lives elsewhere and is left alone)."""
    shutil.rmtree(volumes_dir(pod_dir), ignore_errors=True)


class Mounts:
    """One container's mounts: ``mountPath`` → the link inside the container directory that stands for it."""

    def __init__(self, links: Mapping[str, Path]) -> None:
        self.links = dict(links)
        paths = sorted((p for p in self.links if p.rstrip("/")), key=len, reverse=True)
        self._pattern = re.compile("|".join(rf"(?<![\w./-]){re.escape(p.rstrip('/'))}(?![\w.-])" for p in paths)) \
            if paths else None
        self._targets = {p.rstrip("/"): str(self.links[p]) for p in paths}

    def rewrite(self, text: str) -> str:
        """Absolute mount paths in ``text`` → the container's view of them (whole path components only)."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._targets[m.group(0)], text)

    def rewrite_container(self, container: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``container`` with mount paths rewritten in ``command`` and ``args``."""
        rewritten = dict(container)
        for key in ("command", "args"):
            if container.get(key):
                rewritten[key] = [self.rewrite(str(part)) for part in container[key]]
        return rewritten


def mount_container(container: Mapping[str, Any], volumes: Mapping[str, Path], container_dir: Path) -> Mounts:
    """Link each of the container's ``volumeMounts`` inside ``container_dir`` (idempotent)."""
    links: dict[str, Path] = {}
    container_dir.mkdir(parents=True, exist_ok=True)
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(mount["name"])
        if source is None:
            raise VolumeError(f'cannot find volume "{mount["name"]}" to mount into container "{container["name"]}"')
        if mount.get("subPath"):
            source = source / mount["subPath"]
            if not source.exists():
                source.mkdir(parents=True, exist_ok=True)
        relative = mount["mountPath"].strip("/")
        link = container_dir / relative if relative else container_dir
        if relative:
            _link(link, source)
        links[mount["mountPath"]] = link
    return Mounts(links)


def _link(link: Path, source: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        if os.readlink(link) == str(source):
            return
        link.unlink()
    elif link.is_dir() and not any(link.iterdir()):
        link.rmdir()
    elif link.exists():
        raise VolumeError(f"mount point {link} already exists in the container directory")
    link.symlink_to(source, target_is_directory=source.is_dir())
