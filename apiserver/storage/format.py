"""Which storage format the objects in etcd are in, so an older apiserver never reads (and rewrites) newer data.

Why: etcd keeps its data across kubelab versions (the data dir outlives a ``git pull``), and a later kubelab may
store objects differently (encrypted, another encoding, other keys). The first apiserver on an empty etcd writes
``/kubelab.io/storage-format`` (outside ``/registry/``, where no resource lives) with its ``STORAGE_FORMAT``;
every apiserver checks it before serving and refuses to start on a newer one, saying which kubelab wrote it and
how to start afresh. A change to how objects are stored raises ``STORAGE_FORMAT`` (and upgrades older data, or
refuses it, here).
"""

from __future__ import annotations

import json
from importlib import metadata

from .etcd3 import EtcdStorage, KeyExists, StorageError

__all__ = ["FORMAT_KEY", "STORAGE_FORMAT", "NewerStorageFormat", "check_storage_format"]

STORAGE_FORMAT = 1  # 1: objects as JSON under /registry/<resource>/[<namespace>/]<name>
FORMAT_KEY = b"/kubelab.io/storage-format"


class NewerStorageFormat(StorageError):
    """etcd holds data of a newer storage format than this apiserver knows."""


def _kubelab_version() -> str:
    try:
        return metadata.version("kubelab")
    except metadata.PackageNotFoundError:
        return "unknown"


async def check_storage_format(storage: EtcdStorage, servers: list[str]) -> int:
    """The format of the data in etcd, recorded as ours when there is none; NewerStorageFormat if newer."""
    mine = json.dumps({"format": STORAGE_FORMAT, "writtenBy": f"kubelab {_kubelab_version()}"}).encode()
    current = await storage.get(FORMAT_KEY)
    if current is None:
        try:
            await storage.create(FORMAT_KEY, mine)
            return STORAGE_FORMAT
        except KeyExists:  # another apiserver wrote it meanwhile
            current = await storage.get(FORMAT_KEY)
            assert current is not None
    try:
        recorded = json.loads(current.value)
        found, writer = int(recorded["format"]), str(recorded.get("writtenBy", "another kubelab"))
    except (ValueError, KeyError, TypeError) as err:
        raise NewerStorageFormat(f"{FORMAT_KEY.decode()} in etcd is not a storage format record: "
                                 f"{current.value[:100]!r}") from err
    if found > STORAGE_FORMAT:
        raise NewerStorageFormat(
            f"the etcd at {','.join(servers)} holds objects in storage format {found}, written by {writer}; this "
            f"apiserver (kubelab {_kubelab_version()}) reads format {STORAGE_FORMAT} and older, so it will not "
            f"serve (it could misread or overwrite them). Run the kubelab that wrote them, or start afresh, deleting "
            f"every object: kubelab down --wipe --data-dir DIR (or delete the etcd data dir)."
        )
    return found
