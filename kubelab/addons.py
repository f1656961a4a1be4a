"""What `kubelab up` installs into a new cluster beside the control plane, as kind applies its manifests.

kind's default StorageClass ``standard`` and the rights of its local-path provisioner, which kubelab runs inside
every kubelet (kubelet/provisioner.py) under an identity of its own: the provisioner lists every claim and volume
and creates and deletes PersistentVolumes, which the Node authorizer rightly refuses a kubelet's credentials. The
role is rancher's ``local-path-provisioner-role`` trimmed to what the provisioner does.
"""

from __future__ import annotations

from typing import Any

from kubelab.clusterpki import LOCAL_PATH_PROVISIONER

__all__ = ["ADDONS", "Addon"]

Addon = tuple[str, dict[str, Any]]  # (collection path under the apiserver, object)

RBAC = "rbac.authorization.k8s.io"
PROVISIONER_ROLE = "kubelab:local-path-provisioner"

DEFAULT_STORAGE_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "kubelab.io/local-path", "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
}

PROVISIONER_CLUSTER_ROLE: dict[str, Any] = {
    "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": PROVISIONER_ROLE},
    "rules": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list", "watch", "update"]},
        {"apiGroups": [""], "resources": ["persistentvolumes"],
         "verbs": ["get", "list", "watch", "create", "delete", "patch", "update"]},
        {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
    ],
}

PROVISIONER_BINDING: dict[str, Any] = {
    "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": PROVISIONER_ROLE},
    "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": PROVISIONER_ROLE},
    "subjects": [{"apiGroup": RBAC, "kind": "User", "name": LOCAL_PATH_PROVISIONER.user}],
}

ADDONS: list[Addon] = [
    ("/apis/storage.k8s.io/v1/storageclasses", DEFAULT_STORAGE_CLASS),
    (f"/apis/{RBAC}/v1/clusterroles", PROVISIONER_CLUSTER_ROLE),
    (f"/apis/{RBAC}/v1/clusterrolebindings", PROVISIONER_BINDING),
]
