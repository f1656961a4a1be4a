"""What `kubelab up` installs into a new cluster beside the control plane, as kind applies its manifests.

kind's default StorageClass ``standard`` and the rights of its local-path provisioner, which kubelab runs inside
every kubelet (kubelet/provisioner.py) under an identity of its own: the provisioner lists every claim and volume
and creates and deletes PersistentVolumes, which the Node authorizer rightly refuses a kubelet's credentials. The
role is rancher's ``local-path-provisioner-role`` trimmed to what the provisioner does.

kubeadm's CoreDNS rights for the cluster DNS (``kubelab dns``, as ``system:coredns``): the ClusterRole
``system:coredns`` (list and watch endpoints, services, pods, namespaces, EndpointSlices) and, because no
EndpointSlice controller keeps the slice of a DNS server that is a process rather than pods, a Role in kube-system
to create ``kube-dns`` and keep its EndpointSlice.

The apiserver's kubelet client (``kube-apiserver-kubelet-client``) bound to ``system:kubelet-api-admin``, as kubeadm
binds it: the kubelets authorize its log, exec and proxy calls with SubjectAccessReviews.

The web console's rights (``kubelab ui``, as ``kubelab:console``): reading what its pages show — nodes, pods and
events (its informers), the objects a pod's trace follows (its controllers, the leader Leases), the apiserver's
``/debug/watches`` and ``/debug/watches/deliveries`` and the kubelets' ``/debug/informers`` (``nodes/informers``,
which the kubelets ask before ``nodes/proxy``: kubelet/auth.py; ``nodes/proxy`` would let it exec) — and writing
nothing.
"""

from __future__ import annotations

from typing import Any

from kubelab.clusterpki import APISERVER_KUBELET_CLIENT, CONSOLE, DNS, LOCAL_PATH_PROVISIONER

__all__ = ["ADDONS", "CONSOLE_ROLE", "Addon", "binding"]

Addon = tuple[str, dict[str, Any]]  # (collection path under the apiserver, object)

RBAC = "rbac.authorization.k8s.io"
PROVISIONER_ROLE = "kubelab:local-path-provisioner"
CONSOLE_ROLE = "kubelab:console"
READ = ["get", "list", "watch"]

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


def binding(name: str, role: str, subject: str, *, role_kind: str = "ClusterRole", subject_kind: str = "User",
            namespace: str | None = None) -> dict[str, Any]:
    """A ClusterRoleBinding (a RoleBinding in ``namespace`` when ``role_kind`` is Role) of ``role`` to one user or
    group."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": f"{RBAC}/v1", "kind": f"{role_kind}Binding", "metadata": meta,
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": subject_kind, "name": subject}]}


PROVISIONER_BINDING = binding(PROVISIONER_ROLE, PROVISIONER_ROLE, LOCAL_PATH_PROVISIONER.user)

# The apiserver's kubelet client identity may use every kubelet's API, which the kubelets authorize with a
# SubjectAccessReview (kubeadm binds its kube-apiserver-kubelet-client alike).
KUBELET_API_ADMIN_BINDING = binding("kubelab:kube-apiserver-kubelet-api-admin", "system:kubelet-api-admin",
                                    APISERVER_KUBELET_CLIENT.user)

COREDNS_CLUSTER_ROLE: dict[str, Any] = {
    "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
    "rules": [
        {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
    ],
}

DNS_PUBLISHER_ROLE: dict[str, Any] = {
    "apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "kubelab:dns", "namespace": "kube-system"},
    "rules": [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "create", "update"]},
    ],
}

CONSOLE_CLUSTER_ROLE: dict[str, Any] = {
    "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": CONSOLE_ROLE},
    "rules": [
        {"apiGroups": [""], "resources": ["nodes", "pods", "events", "namespaces", "replicationcontrollers"],
         "verbs": READ},
        {"apiGroups": [""], "resources": ["nodes/informers"], "verbs": ["get"]},  # a kubelet's /debug/informers
        {"apiGroups": ["apps"], "resources": ["replicasets", "deployments", "statefulsets", "daemonsets"],
         "verbs": READ},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": READ},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": READ},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": READ},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": READ},
        {"nonResourceURLs": ["/debug/watches", "/debug/watches/deliveries"], "verbs": ["get"]},
    ],
}


ADDONS: list[Addon] = [
    ("/apis/storage.k8s.io/v1/storageclasses", DEFAULT_STORAGE_CLASS),
    (f"/apis/{RBAC}/v1/clusterroles", PROVISIONER_CLUSTER_ROLE),
    (f"/apis/{RBAC}/v1/clusterrolebindings", PROVISIONER_BINDING),
    (f"/apis/{RBAC}/v1/clusterroles", COREDNS_CLUSTER_ROLE),
    (f"/apis/{RBAC}/v1/clusterrolebindings", binding("system:coredns", "system:coredns", DNS.user)),
    (f"/apis/{RBAC}/v1/namespaces/kube-system/roles", DNS_PUBLISHER_ROLE),
    (f"/apis/{RBAC}/v1/namespaces/kube-system/rolebindings",
     binding("kubelab:dns", "kubelab:dns", DNS.user, role_kind="Role", namespace="kube-system")),
    (f"/apis/{RBAC}/v1/clusterrolebindings", KUBELET_API_ADMIN_BINDING),
    (f"/apis/{RBAC}/v1/clusterroles", CONSOLE_CLUSTER_ROLE),
    (f"/apis/{RBAC}/v1/clusterrolebindings", binding(CONSOLE_ROLE, CONSOLE_ROLE, CONSOLE.user)),
]
