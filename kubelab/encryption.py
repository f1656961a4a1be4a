"""The EncryptionConfiguration `kubelab up` hands the apiserver, so Secrets are encrypted at rest from the start.

Written once per data dir (0600, beside the etcd data it unlocks) with a fresh random 32-byte ``aescbc`` key and
``identity`` second (Secrets written before encryption was on stay readable), then kept: etcd's data outlives a
restart, and a new key would leave every Secret unreadable. To rotate, edit the file as kube's documentation
says (a new key first, restart, ``kubectl get secrets -A -o json | kubectl replace -f -``, drop the old key).
aescbc rather than aesgcm: AES-GCM with random nonces must be rotated every 200k writes, which a long-lived dev
cluster would not do; aescbc has no such limit and the apiserver never answers decryption details to a client.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

__all__ = ["ensure_encryption_config"]

FILE_NAME = "encryption-config.yaml"


def ensure_encryption_config(data_dir: Path) -> Path:
    """The data dir's EncryptionConfiguration, created with a new key when missing."""
    path = data_dir / FILE_NAME
    if path.exists():
        return path
    secret = base64.b64encode(os.urandom(32)).decode()
    body = (
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: EncryptionConfiguration\n"
        "resources:\n"
        "  - resources: [secrets]\n"
        "    providers:\n"
        "      - aescbc:\n"
        "          keys:\n"
        f"            - name: key1\n"
        f"              secret: {secret}\n"
        "      - identity: {}\n"
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(body)
    return path
