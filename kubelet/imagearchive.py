"""``kubelab image load FILE``: import a ``docker save`` or OCI image-layout tarball into a node's image store, as
``kind load image-archive`` does, for the linux runtime to run.

Both layouts are read from the archive itself: ``manifest.json`` (``docker save``: each image's ``Config``,
``RepoTags`` and ``Layers``) or ``index.json`` (OCI: manifests by digest in ``blobs/sha256/``, the name in the
``org.opencontainers.image.ref.name`` or ``io.containerd.image.name`` annotation). The layers (plain or gzip
tarballs) are applied in order to one tree, with the whiteouts of the layer format: ``.wh.<name>`` deletes
``<name>`` from the layers below, ``.wh..wh..opq`` empties its directory first. The tree goes to
``<images>/rootfs/sha256-<id>/`` and the image's manifest, with its config's Entrypoint, Cmd, Env, WorkingDir and
User, to ``<images>/sha256-<id>.json`` — what ``images.ImageStore`` lists in the Node's ``status.images``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .images import normalize, parse_reference

WHITEOUT, OPAQUE = ".wh.", ".wh..wh..opq"


class ArchiveError(Exception):
    """Not an image archive this loader understands (the message says why)."""


@dataclass
class Image:
    names: list[str]
    config: dict[str, Any]
    config_digest: str
    layers: list[str]  # member names in the archive, bottom first


def read_images(archive: tarfile.TarFile) -> list[Image]:
    """The images in ``archive`` (``docker save`` or OCI image layout)."""
    members = set(archive.getnames())
    if "manifest.json" in members:
        return [_docker_image(archive, entry) for entry in _json(archive, "manifest.json")]
    if "index.json" in members:
        return [_oci_image(archive, m) for m in _json(archive, "index.json").get("manifests") or []]
    raise ArchiveError("neither manifest.json (docker save) nor index.json (OCI image layout) in the archive")


def _json(archive: tarfile.TarFile, name: str) -> Any:
    f = archive.extractfile(name)
    if f is None:
        raise ArchiveError(f"{name} is not a file")
    return json.load(f)


def _docker_image(archive: tarfile.TarFile, entry: dict[str, Any]) -> Image:
    raw = archive.extractfile(entry["Config"])
    if raw is None:
        raise ArchiveError(f"{entry['Config']} is not a file")
    body = raw.read()
    return Image([normalize(t) for t in entry.get("RepoTags") or []], json.loads(body),
                 "sha256:" + hashlib.sha256(body).hexdigest(), list(entry["Layers"]))


def _blob(digest: str) -> str:
    algorithm, _, hexdigest = digest.partition(":")
    return f"blobs/{algorithm}/{hexdigest}"


def _oci_image(archive: tarfile.TarFile, descriptor: dict[str, Any]) -> Image:
    manifest = _json(archive, _blob(descriptor["digest"]))
    if "manifests" in manifest:  # an index of platforms: the first one
        return _oci_image(archive, manifest["manifests"][0])
    annotations = descriptor.get("annotations") or {}
    name = annotations.get("io.containerd.image.name") or annotations.get("org.opencontainers.image.ref.name")
    names = [normalize(name)] if name and (":" in name or "/" in name) else []  # not a bare tag
    return Image(names, _json(archive, _blob(manifest["config"]["digest"])), manifest["config"]["digest"],
                 [_blob(layer["digest"]) for layer in manifest.get("layers") or []])


def apply_layer(layer: IO[bytes], root: Path) -> None:
    """Apply one layer tarball to ``root``: its whiteouts first, then its files."""
    with tarfile.open(fileobj=layer, mode="r:*") as tar:
        members = tar.getmembers()
        keep = []
        for member in members:
            path = PurePosixPath(member.name.lstrip("/"))
            if ".." in path.parts:
                continue
            if path.name == OPAQUE:
                _clear(root / path.parent)
            elif path.name.startswith(WHITEOUT):
                _remove(root / path.parent / path.name[len(WHITEOUT):])
            else:
                keep.append(member)
        for member in keep:
            target = root / member.name.lstrip("/")
            if target.is_symlink() or (target.exists() and not target.is_dir()) or \
                    (target.is_dir() and not member.isdir()):
                _remove(target)  # a layer replaces what the ones below had at the path
        tar.extractall(root, members=keep, filter="tar")


def _clear(directory: Path) -> None:
    if directory.is_dir() and not directory.is_symlink():
        for child in directory.iterdir():
            _remove(child)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def load(archive_path: Path, images_root: Path) -> list[str]:
    """Import every image of the archive into the store at ``images_root``; returns the names loaded."""
    loaded: list[str] = []
    try:
        archive = tarfile.open(archive_path)  # noqa: SIM115 (entered below, once the open error is translated)
    except (OSError, tarfile.TarError) as err:
        raise ArchiveError(f"cannot read {archive_path}: {err}") from None
    with archive:
        for image in read_images(archive):
            key = image.config_digest.replace(":", "-")
            tree = images_root / "rootfs" / key
            tmp = tree.with_name(f".{key}.{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            size = 0
            for layer in image.layers:
                member = archive.extractfile(layer)
                if member is None:
                    raise ArchiveError(f"layer {layer} is not in the archive")
                size += archive.getmember(layer).size
                apply_layer(member, tmp)
            shutil.rmtree(tree, ignore_errors=True)
            tmp.rename(tree)
            config = image.config.get("config") or {}
            names = image.names + [f"{parse_reference(n).repository}@{image.config_digest}" for n in image.names[:1]]
            manifest = {"names": names, "size": size, "digest": image.config_digest, "rootfs": str(tree),
                        "entrypoint": config.get("Entrypoint") or [], "cmd": config.get("Cmd") or [],
                        "env": config.get("Env") or [], "workingDir": config.get("WorkingDir") or "",
                        "user": config.get("User") or "", "description": "loaded from " + archive_path.name}
            path = images_root / f"{key}.json"
            path.with_suffix(".tmp").write_text(json.dumps(manifest, indent=1))
            path.with_suffix(".tmp").replace(path)
            loaded.extend(image.names or [image.config_digest])
    return loaded
