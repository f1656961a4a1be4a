"""The pure rules of the statefulset controller (``pkg/controller/statefulset/stateful_set_utils.go``), kept apart
so they can be read and tested without a cluster.

* Identity: pod ``<set>-<ordinal>`` for ordinals ``ordinals.start`` … ``start + replicas - 1``, with
  ``hostname`` = its name, ``subdomain`` = ``serviceName`` and the labels ``statefulset.kubernetes.io/pod-name``
  and ``apps.kubernetes.io/pod-index`` (PodIndexLabel, on by default since 1.28).
* Storage: one claim ``<template>-<set>-<ordinal>`` per ``volumeClaimTemplates`` entry, labelled with the set's
  ``matchLabels``, mounted as the pod volume named after the template (replacing a template volume of that name).
* Revisions: ``controller-revision-hash`` on a pod is the name of the ControllerRevision it was made from; a
  missing pod below the RollingUpdate ``partition`` is made from the current revision, the others from the
  update revision (``newVersionedStatefulSetPod``).
* Claim ownership (``persistentVolumeClaimRetentionPolicy``, StatefulSetAutoDeletePVC, GA in 1.32): whenDeleted
  Delete → the claim is controlled by the set (the garbage collector deletes it with the set); whenScaled Delete →
  a claim of a pod beyond the replicas is controlled by that pod instead (deleted once the scaled-down pod is
  gone).  A claim referring to an earlier set or pod of the same name, or controlled by something else, is left
  alone.
* Status: ``replica_status`` counts the created, ready, available, current and updated pods.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from apimachinery.meta import Object
from controllers.support.history import REVISION_HASH_LABEL
from controllers.support.podutil import (
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    controller_ref,
    is_pod_available,
    is_pod_ready,
    meta,
    pod_from_template,
)

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


# --- ordinals and identity -----------------------------------------------------------------------------------
def spec_of(sts: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = sts.get("spec") or {}
    return spec


def start_ordinal(sts: Mapping[str, Any]) -> int:
    return int((spec_of(sts).get("ordinals") or {}).get("start") or 0)


def replica_count(sts: Mapping[str, Any]) -> int:
    return int(spec_of(sts).get("replicas") or 0)


def parent_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """The set a pod's name says it belongs to and its ordinal (``""``, -1 for a name of another shape)."""
    match = _ORDINAL.match(meta(pod).get("name") or "")
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def ordinal_of(pod: Mapping[str, Any]) -> int:
    return parent_and_ordinal(pod)[1]


def is_member_of(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return parent_and_ordinal(pod)[0] == meta(sts).get("name")


def in_ordinal_range(pod: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    start = start_ordinal(sts)
    return start <= ordinal_of(pod) < start + replica_count(sts)


def pod_name(sts: Mapping[str, Any], ordinal: int) -> str:
    return f"{meta(sts)['name']}-{ordinal}"


def claim_name(sts: Mapping[str, Any], template_name: str, ordinal: int) -> str:
    return f"{template_name}-{meta(sts)['name']}-{ordinal}"


def update_identity(sts: Mapping[str, Any], pod: Object) -> None:
    """Name, namespace and identity labels of the pod at its ordinal (``updateIdentity``)."""
    ordinal = ordinal_of(pod)
    m = pod.setdefault("metadata", {})
    m["name"] = pod_name(sts, ordinal)
    m["namespace"] = meta(sts).get("namespace")
    labels = m.get("labels") or {}
    labels[POD_NAME_LABEL] = m["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)
    m["labels"] = labels


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    m = meta(pod)
    labels = m.get("labels") or {}
    return (ordinal >= 0 and parent == meta(sts).get("name") and m.get("name") == pod_name(sts, ordinal)
            and m.get("namespace") == meta(sts).get("namespace") and labels.get(POD_NAME_LABEL) == m.get("name")
            and labels.get(POD_INDEX_LABEL) == str(ordinal))


# --- storage ---------------------------------------------------------------------------------------------------
def claims_for(sts: Mapping[str, Any], ordinal: int) -> dict[str, Object]:
    """Template name → the claim of that ordinal (``getPersistentVolumeClaims``)."""
    match_labels = (spec_of(sts).get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, Object] = {}
    for template in spec_of(sts).get("volumeClaimTemplates") or []:
        template_meta = template.get("metadata") or {}
        name = template_meta.get("name") or ""
        metadata: dict[str, Any] = {k: copy.deepcopy(v) for k, v in template_meta.items()
                                    if k in ("labels", "annotations", "finalizers")}
        metadata.update(name=claim_name(sts, name, ordinal), namespace=meta(sts).get("namespace"))
        metadata["labels"] = {**(metadata.get("labels") or {}), **match_labels}
        claims[name] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
                        "spec": copy.deepcopy(template.get("spec") or {})}
    return claims


def update_storage(sts: Mapping[str, Any], pod: Object) -> None:
    """Mount every claim of the pod's ordinal under its template's name (``updateStorage``)."""
    claims = claims_for(sts, ordinal_of(pod))
    spec = pod.setdefault("spec", {})
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": meta(claim)["name"]}}
               for name, claim in claims.items()]
    volumes.extend(v for v in spec.get("volumes") or [] if v.get("name") not in claims)
    if volumes:
        spec["volumes"] = volumes


def storage_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for name, claim in claims_for(sts, ordinal).items():
        source = (volumes.get(name) or {}).get("persistentVolumeClaim") or {}
        if source.get("claimName") != meta(claim)["name"]:
            return False
    return True


# --- revisions and new pods -------------------------------------------------------------------------------------
def apply_revision(sts: Object, revision: Object) -> Object:
    """The set as it was at ``revision``: its template put back (``ApplyRevision``)."""
    applied = copy.deepcopy(sts)
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    applied.setdefault("spec", {})["template"] = template
    return applied


def pod_revision(pod: Mapping[str, Any]) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_HASH_LABEL) or "")


def new_pod(sts: Object, ordinal: int, revision_name: str, ref: Mapping[str, Any]) -> Object:
    """The pod of ``ordinal`` made from ``sts``'s template (``newStatefulSetPod`` + the revision label)."""
    pod = pod_from_template(spec_of(sts).get("template") or {}, sts, ref)
    del pod["metadata"]["generateName"]
    pod["metadata"]["name"] = pod_name(sts, ordinal)
    update_identity(sts, pod)
    pod["spec"]["hostname"] = pod["metadata"]["name"]
    if spec_of(sts).get("serviceName"):
        pod["spec"]["subdomain"] = spec_of(sts)["serviceName"]
    update_storage(sts, pod)
    pod["metadata"]["labels"][REVISION_HASH_LABEL] = revision_name
    return pod


def versioned_pod(current_set: Object, update_set: Object, current_revision: str, update_revision: str,
                  ordinal: int, ref: Mapping[str, Any]) -> Object:
    """Below the RollingUpdate partition a missing pod comes back at the current revision, else at the update one
    (``newVersionedStatefulSetPod``)."""
    strategy = spec_of(current_set).get("updateStrategy") or {}
    if strategy.get("type") == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        # without rollingUpdate, the pods the status counts as current stay so
        below = int((rolling or {}).get("partition") or 0) if rolling is not None else \
            int((current_set.get("status") or {}).get("currentReplicas") or 0)
        if ordinal < start_ordinal(current_set) + below:
            return new_pod(current_set, ordinal, current_revision, ref)
    return new_pod(update_set, ordinal, update_revision, ref)


# --- pod states ---------------------------------------------------------------------------------------------------
def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_created(pod: Mapping[str, Any]) -> bool:
    """Stored by the apiserver (a pod built by the controller and not yet created has no phase)."""
    return bool(phase(pod))


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def is_failed(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == POD_FAILED


def is_succeeded(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == POD_SUCCEEDED


def is_pending(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == POD_PENDING


def is_running_and_ready(pod: Object) -> bool:
    return phase(pod) == POD_RUNNING and is_pod_ready(pod)


def is_running_and_available(pod: Object, min_ready_seconds: int, now: datetime) -> bool:
    return phase(pod) == POD_RUNNING and is_pod_available(pod, min_ready_seconds, now)


def is_healthy(pod: Object) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


# --- claim ownership (persistentVolumeClaimRetentionPolicy) -------------------------------------------------------
SET_KIND, POD_KIND = ("apps/v1", "StatefulSet"), ("v1", "Pod")


def retention_policy(sts: Mapping[str, Any]) -> tuple[str, str]:
    policy = spec_of(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain"


def _matches(ref: Mapping[str, Any], owner: Mapping[str, Any], kind: tuple[str, str]) -> bool:
    """The reference names ``owner`` (``matchesRef``: apiVersion, kind and name; not the uid)."""
    return (ref.get("apiVersion"), ref.get("kind")) == kind and ref.get("name") == meta(owner).get("name")


def _has_ref(claim: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = meta(owner).get("uid")
    return bool(uid) and any(r.get("uid") == uid for r in meta(claim).get("ownerReferences") or [])


def _has_stale_ref(claim: Mapping[str, Any], owner: Mapping[str, Any], kind: tuple[str, str]) -> bool:
    """A reference to an earlier object of ``owner``'s name (``hasStaleOwnerRef``)."""
    ref = next((r for r in meta(claim).get("ownerReferences") or [] if _matches(r, owner, kind)), None)
    return ref is not None and ref.get("uid") != meta(owner).get("uid")


def _unexpected_controller(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Another controller manages the claim (or ours under an old uid) while a policy deletes claims."""
    if retention_policy(sts) == ("Retain", "Retain"):
        return False
    for ref in meta(claim).get("ownerReferences") or []:
        for owner, kind in ((sts, SET_KIND), (pod, POD_KIND)):
            if _matches(ref, owner, kind):
                if ref.get("uid") != meta(owner).get("uid"):
                    return True
                break
        else:
            if ref.get("controller"):
                return True
    return False


def _wanted_owners(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[bool, bool]:
    """(the set, the pod) the claim should be controlled by: whenDeleted Delete → the set; whenScaled Delete and the
    pod beyond the replicas → the pod instead."""
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = when_scaled == "Delete" and not in_ordinal_range(pod, sts)
    return when_deleted == "Delete" and not scaled_down, scaled_down


def claim_owners_up_to_date(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the claim's owners agree with the retention policy (``isClaimOwnerUpToDate``); a claim held by an
    earlier set or pod, or by another controller, is left alone."""
    if _has_stale_ref(claim, sts, SET_KIND) or _has_stale_ref(claim, pod, POD_KIND):
        return True
    ours = _has_ref(claim, sts) or _has_ref(claim, pod)
    if _unexpected_controller(claim, sts, pod):
        return not ours
    uids = {meta(sts).get("uid"), meta(pod).get("uid")} - {None}
    if any(r.get("uid") in uids and not r.get("controller") for r in meta(claim).get("ownerReferences") or []):
        return False
    return (_has_ref(claim, sts), _has_ref(claim, pod)) == _wanted_owners(sts, pod)


def claim_owner_refs(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claim's ownerReferences as the retention policy wants them (``updateClaimOwnerRefForSetAndPod``): ours
    scrubbed, then the set and/or the pod added as controller references."""
    refs = [dict(r) for r in meta(claim).get("ownerReferences") or []
            if not (_matches(r, sts, SET_KIND) or _matches(r, pod, POD_KIND))]
    if _unexpected_controller(claim, sts, pod):
        return refs
    want_set, want_pod = _wanted_owners(sts, pod)
    for wanted, owner, (api_version, kind) in ((want_set, sts, SET_KIND), (want_pod, pod, POD_KIND)):
        if wanted and meta(owner).get("uid") and not any(r.get("uid") == meta(owner)["uid"] for r in refs):
            refs.append(controller_ref(owner, api_version, kind))
    return refs


def claim_is_stale(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """A claim still owned by an earlier pod of this ordinal (``PodClaimIsStale``; never with whenScaled Retain,
    whose claims are meant to be reused): it is about to be deleted, so the new pod waits for it to go."""
    return retention_policy(sts)[1] != "Retain" and _has_stale_ref(claim, pod, POD_KIND)


# --- status ---------------------------------------------------------------------------------------------------------
def replica_status(pods: Iterable[Object], min_ready_seconds: int, current_revision: str, update_revision: str,
                   now: datetime) -> dict[str, int]:
    """``computeReplicaStatus``."""
    counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0,
              "updatedReplicas": 0}
    for pod in pods:
        if is_created(pod):
            counts["replicas"] += 1
        if is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_running_and_available(pod, min_ready_seconds, now):
                counts["availableReplicas"] += 1
        if is_created(pod) and not is_terminating(pod):
            revision = pod_revision(pod)
            if revision == current_revision:
                counts["currentReplicas"] += 1
            if revision == update_revision:
                counts["updatedReplicas"] += 1
    return counts


def wire_status(sts: Mapping[str, Any], counts: Mapping[str, int], current_revision: str, update_revision: str,
                collision_count: int) -> dict[str, Any]:
    """The status as Go writes it (zero counts other than replicas and availableReplicas omitted; collisionCount
    always, the controller setting it), after
    ``completeRollingUpdate``: a RollingUpdate whose pods are all updated and ready makes the update revision
    the current one."""
    counts = dict(counts)
    strategy = (spec_of(sts).get("updateStrategy") or {}).get("type")
    if strategy == "RollingUpdate" and counts["updatedReplicas"] == counts["replicas"] \
            and counts["readyReplicas"] == counts["replicas"]:
        counts["currentReplicas"] = counts["updatedReplicas"]
        current_revision = update_revision
    status: dict[str, Any] = {"observedGeneration": meta(sts).get("generation"), "replicas": counts["replicas"]}
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if counts[key]:
            status[key] = counts[key]
    status.update(currentRevision=current_revision, updateRevision=update_revision, collisionCount=collision_count)
    status["availableReplicas"] = counts["availableReplicas"]
    return {k: v for k, v in status.items() if v is not None and v != ""}


def descending_ordinals(pods: Sequence[Object]) -> list[Object]:
    return sorted(pods, key=ordinal_of, reverse=True)
