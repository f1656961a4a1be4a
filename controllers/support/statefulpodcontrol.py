"""``StatefulPodControl``: how the statefulset controller creates, updates and deletes its pods and their claims
(``pkg/controller/statefulset/stateful_pod_control.go``).

Every write is reported on the StatefulSet as kube words it: ``SuccessfulCreate`` "create Pod web-0 in
StatefulSet web successful", ``SuccessfulCreate`` "create Claim www-web-0 Pod web-0 in StatefulSet web success",
``SuccessfulDelete``/``SuccessfulUpdate`` likewise, and ``Failed…`` "… failed error: <err>" as Warnings.

* ``create_pod``: the pod's claims first (a missing one is created; one being deleted is an error, retried
  later), then the pod; an existing pod of that name is no error (the cache was behind).  The claims then get
  the ownerReferences the retention policy asks for.
* ``update_pod``: identity, storage and claim ownership put right on a live pod (``UpdateStatefulPod``).
* ``delete_pod``: a pod already gone is no error.
* Claims are read from the PVC informer's cache, as kube reads its lister.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import AlreadyExists, NotFound, StatusError
from apimachinery.meta import Object
from controllers.support import statefulutil as su
from controllers.support.podutil import meta
from kubeclient import Clientset, EventRecorder
from kubeclient.informer import SharedInformer


class ClaimBeingDeleted(Exception):
    """A claim of the pod is being deleted: the pod is created once it is gone and can be made anew."""


class StatefulPodControl:
    """Writes pods and claims for one StatefulSet at a time; see the module docstring."""

    def __init__(self, clientset: Clientset, recorder: EventRecorder, claims: SharedInformer) -> None:
        self.clientset = clientset
        self.recorder = recorder
        self.claims = claims

    # --- events ----------------------------------------------------------------------------------------------
    def _pod_event(self, verb: str, sts: Object, pod: Mapping[str, Any], err: Exception | None = None) -> None:
        name, set_name = meta(pod).get("name"), meta(sts).get("name")
        if err is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                                f"{verb} Pod {name} in StatefulSet {set_name} successful")
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}",
                                f"{verb} Pod {name} in StatefulSet {set_name} failed error: {_message(err)}")

    def _claim_event(self, verb: str, sts: Object, pod: Mapping[str, Any], claim: Mapping[str, Any],
                     err: Exception | None = None) -> None:
        names = (meta(claim).get("name"), meta(pod).get("name"), meta(sts).get("name"))
        if err is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                                "{} Claim {} Pod {} in StatefulSet {} success".format(verb, *names))
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}",
                                "{} Claim {} for Pod {} in StatefulSet {} failed error: {}".format(
                                    verb, *names, _message(err)))

    # --- claims ----------------------------------------------------------------------------------------------
    def claim(self, namespace: str | None, name: str) -> Object | None:
        return self.claims.indexer.get_by_key(f"{namespace}/{name}")

    def stale_claim(self, sts: Object, pod: Object) -> bool:
        """Whether a claim of the (new) pod still belongs to an earlier pod of its ordinal (``PodClaimIsStale``)."""
        for claim in su.claims_for(sts, su.ordinal_of(pod)).values():
            existing = self.claim(meta(claim).get("namespace"), meta(claim)["name"])
            if existing is not None and su.claim_is_stale(existing, sts, pod):
                return True
        return False

    async def create_missing_claims(self, sts: Object, pod: Object) -> None:
        """Create the pod's claims that do not exist (``createPersistentVolumeClaims``)."""
        for claim in su.claims_for(sts, su.ordinal_of(pod)).values():
            existing = self.claim(meta(claim).get("namespace"), meta(claim)["name"])
            if existing is not None:
                if meta(existing).get("deletionTimestamp"):
                    raise ClaimBeingDeleted(f"pvc {meta(claim)['name']} is being deleted")
                continue
            try:
                await self.clientset.persistent_volume_claims.create(claim, meta(claim).get("namespace"))
            except AlreadyExists:
                continue
            except StatusError as err:
                self._claim_event("create", sts, pod, claim, err)
                raise
            self._claim_event("create", sts, pod, claim)

    def claims_match_retention(self, sts: Object, pod: Object) -> bool:
        """Whether every existing claim of the pod is owned as the retention policy wants
        (``ClaimsMatchRetentionPolicy``; a claim not there yet matches)."""
        for claim in su.claims_for(sts, su.ordinal_of(pod)).values():
            existing = self.claim(meta(claim).get("namespace"), meta(claim)["name"])
            if existing is not None and not su.claim_owners_up_to_date(existing, sts, pod):
                return False
        return True

    async def fix_claim_owners(self, sts: Object, pod: Object) -> None:
        """Give the pod's claims the ownerReferences of the retention policy (``UpdatePodClaimForRetentionPolicy``)."""
        for claim in su.claims_for(sts, su.ordinal_of(pod)).values():
            namespace, name = meta(claim).get("namespace"), meta(claim)["name"]
            existing = self.claim(namespace, name)
            if existing is None:  # just created: not in the cache yet
                try:
                    existing = await self.clientset.persistent_volume_claims.get(name, namespace)
                except NotFound:
                    continue
            if su.claim_owners_up_to_date(existing, sts, pod):
                continue
            refs = su.claim_owner_refs(existing, sts, pod)
            # An update, as kube's controller writes it (its role may update claims, not patch them); a stale
            # copy is a 409 and the set is synced again.
            updated = {**existing, "metadata": {**meta(existing), "ownerReferences": refs}}
            try:
                await self.clientset.persistent_volume_claims.update(updated)
            except NotFound:
                continue

    # --- pods ------------------------------------------------------------------------------------------------
    async def create_pod(self, sts: Object, pod: Object) -> bool:
        """Create the claims and the pod; False when a pod of that name already exists."""
        try:
            await self.create_missing_claims(sts, pod)
        except StatusError as err:
            self._pod_event("create", sts, pod, err)
            raise
        try:
            created = await self.clientset.pods.create(pod, meta(sts).get("namespace"))
        except AlreadyExists:
            return False
        except StatusError as err:
            self._pod_event("create", sts, pod, err)
            raise
        try:
            await self.fix_claim_owners(sts, created)
        except StatusError as err:
            self._pod_event("update", sts, pod, err)
            raise
        self._pod_event("create", sts, pod)
        return True

    async def update_pod(self, sts: Object, pod: Object) -> None:
        """Put identity, storage and claim ownership right on a live pod."""
        if not su.identity_matches(sts, pod) or not su.storage_matches(sts, pod):
            su.update_identity(sts, pod)
            su.update_storage(sts, pod)
            try:
                await self.clientset.pods.update(pod)
            except StatusError as err:
                self._pod_event("update", sts, pod, err)
                raise
            self._pod_event("update", sts, pod)
        if not self.claims_match_retention(sts, pod):
            await self.fix_claim_owners(sts, pod)

    async def delete_pod(self, sts: Object, pod: Object) -> None:
        m = meta(pod)
        try:
            await self.clientset.pods.delete(m["name"], m.get("namespace"))
        except NotFound:
            return
        except StatusError as err:
            self._pod_event("delete", sts, pod, err)
            raise
        self._pod_event("delete", sts, pod)


def _message(err: Exception) -> str:
    return err.message if isinstance(err, StatusError) else str(err)
