"""The ServiceAccount admission plugin (``plugin/pkg/admission/serviceaccount``): every new pod runs as an account.

On pod creation (mirror pods aside, whose spec is the kubelet's), as kube-apiserver:

* ``spec.serviceAccountName`` defaults to ``default``;
* the account must exist: it is read from the watch cache, then from etcd, ``default`` several times over a
  second or two (the controller-manager creates it just after the namespace); otherwise 403 ``pods "x" is
  forbidden: error looking up service account ns/name: serviceaccount "name" not found``;
* unless ``automountServiceAccountToken`` is false (the pod's setting wins over the account's), the projected
  volume ``kube-api-access-<5 chars>`` (a bound token for 3607 s, ``ca.crt`` from the ``kube-root-ca.crt``
  ConfigMap, the ``namespace`` from the downward API; mode 0644) is added and mounted read-only at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` in every init and app container that mounts nothing there;
* a pod without ``imagePullSecrets`` gets the account's.

kube's integration tests run the apiserver without it (``--disable-admission-plugins=ServiceAccount``): pods then
need no account, as in a namespace no controller-manager has filled.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from apimachinery import errors
from apimachinery.meta import generate_name, json_copy

from .attributes import Attributes, Object
from .sources import Sources

NAME = "ServiceAccount"
DEFAULT_SERVICE_ACCOUNT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
TOKEN_EXPIRATION_SECONDS = 3607  # WarnOnlyBoundTokenExpirationSeconds: the apiserver extends it (warnafter)
PROJECTED_DEFAULT_MODE = 0o644
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_ATTEMPTS = 10  # kube's lookups of a missing "default" account, 100-200 ms apart


def token_volume(name: str) -> Object:
    """``TokenVolumeSource``: the projected volume every automounting pod gets."""
    return {"name": name, "projected": {
        "defaultMode": PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]}}


def should_automount(account: Object, pod: Object) -> bool:
    """The pod's ``automountServiceAccountToken`` if set, else the account's, else true."""
    setting = pod["spec"].get("automountServiceAccountToken")
    if setting is None:
        setting = account.get("automountServiceAccountToken")
    return setting is not False


def mount_token(pod: Object) -> None:
    """``mountServiceAccountToken``: the volume (an existing ``kube-api-access-*`` one is reused) and its mounts."""
    spec = pod["spec"]
    volumes = spec.get("volumes") or []
    existing = next((v["name"] for v in volumes if str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = existing or generate_name(VOLUME_PREFIX)
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            mounts = container.get("volumeMounts") or []
            if any(m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*volumes, token_volume(name)]


class ServiceAccountAdmission:
    """Mutating admission of pod creations (``MutatingPlugin``)."""

    def __init__(self, sources: Sources, attempts: int = DEFAULT_ATTEMPTS) -> None:
        self.sources = sources
        self.attempts = attempts

    def configured(self) -> bool:
        return True

    def concerns(self, group: str, resource: str) -> bool:
        return (group, resource) == ("", "pods")

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.group == "" and attrs.resource == "pods" and not attrs.subresource
                and attrs.operation == "CREATE" and attrs.obj is not None)

    async def admit(self, attrs: Attributes) -> None:
        assert attrs.obj is not None
        pod = json_copy(attrs.obj)
        if MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
            return
        spec = pod.setdefault("spec", {})
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
        name = spec["serviceAccountName"]
        account = await self.service_account(attrs.namespace, name)
        if account is None:
            raise errors.forbidden("pods", attrs.name, f"error looking up service account {attrs.namespace}/{name}: "
                                   f'serviceaccount "{name}" not found')
        if should_automount(account, pod):
            mount_token(pod)
        if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [{"name": ref.get("name", "")} for ref in account["imagePullSecrets"]]
        attrs.obj = pod

    async def service_account(self, namespace: str, name: str) -> Any:
        """kube's ``getServiceAccount``: the cache, then live reads (ten for ``default``, which is on its way)."""
        found = self.sources.get("", "serviceaccounts", namespace, name)
        if found is not None:
            return found
        store = self.sources.registry.stores[("", "serviceaccounts")]
        for attempt in range(self.attempts if name == DEFAULT_SERVICE_ACCOUNT else 1):
            if attempt:
                await asyncio.sleep(random.uniform(0.1, 0.2))
            try:
                return (await store.get(namespace, name)).obj
            except errors.NotFound:
                continue
        return None
