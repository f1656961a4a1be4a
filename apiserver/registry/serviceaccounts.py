"""ServiceAccounts (core/v1): identities for pods; ``default`` in every namespace comes from the controller-manager.

What kube-apiserver does, and where it does it:

* ``ValidateServiceAccount`` checks only the metadata (the name is a DNS subdomain, checked generically); the
  references in ``secrets`` and ``imagePullSecrets`` are not validated, and ``automountServiceAccountToken``
  being a bool is the decoder's business (a 400, like any wrongly typed field);
* ``PrepareForCreate``/``PrepareForUpdate`` clean ``secrets``: each ``ObjectReference`` keeps only its ``name``
  (``cleanSecretReferences``);
* ``kubectl get sa`` prints NAME, SECRETS (how many references ``secrets`` holds) and AGE.
"""

from __future__ import annotations

from typing import Any

from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since


def clean_secret_references(obj: Object) -> None:
    """Every ``secrets`` entry keeps only its ``name``: the namespace, uid … of a reference are never stored."""
    secrets = obj.get("secrets")
    if isinstance(secrets, list):
        obj["secrets"] = [{"name": ref["name"]} if isinstance(ref, dict) and ref.get("name") else {}
                          for ref in secrets]


class ServiceAccountStrategy(Strategy):
    kind = "ServiceAccount"
    resource = "serviceaccounts"
    singular = "serviceaccount"
    short_names = ("sa",)
    bumps_generation = False
    subresources = ("token",)  # TokenRequest (apiserver.serviceaccount.tokenrequest)

    def prepare_for_create(self, obj: Object) -> None:
        clean_secret_references(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        clean_secret_references(new)

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Secrets", description="Secrets is a list of the secrets in the same namespace that "
                            "pods running using this ServiceAccount are allowed to use. Pods are only limited to "
                            "this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" "
                            "annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation "
                            "is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted "
                            "secrets. This field should not be used to find auto-generated service account token "
                            "secrets for use outside of pods. Instead, tokens can be requested directly using the "
                            "TokenRequest API, or service account token secrets can be manually created. More info: "
                            "https://kubernetes.io/docs/concepts/configuration/secret"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), len(obj.get("secrets") or []), since(metadata.get("creationTimestamp"))]
