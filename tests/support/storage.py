"""What a test needs for persistent storage: the controllers that bind and protect claims, and a
``kubelab.io/local-path`` StorageClass (a real kubelet provisions its volumes; see kubelet/provisioner.py).

A module that runs pods with claims starts a controller-manager with ``--controllers=STORAGE_CONTROLLERS``, a
scheduler (VolumeBinding selects the node) and a kubelet, and creates its own class with ``local_path_class``
(not the default one: the session's other tests keep their claims without a class)."""

from __future__ import annotations

from typing import Any

import httpx

STORAGE_CONTROLLERS = "persistentvolume-binder,pvc-protection,pv-protection,persistentvolume-expander"


def local_path_class(name: str, reclaim_policy: str = "Delete", *, default: bool = False,
                     binding_mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    """A StorageClass of the built-in provisioner, expandable, as kind's ``standard`` (``default``: annotated)."""
    metadata: dict[str, Any] = {"name": name}
    if default:
        metadata["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": metadata,
            "provisioner": "kubelab.io/local-path", "reclaimPolicy": reclaim_policy,
            "volumeBindingMode": binding_mode, "allowVolumeExpansion": True}


def create_local_path_class(client: httpx.Client, name: str, reclaim_policy: str = "Delete") -> None:
    resp = client.post("/apis/storage.k8s.io/v1/storageclasses", json=local_path_class(name, reclaim_policy))
    assert resp.status_code == 201, resp.text
