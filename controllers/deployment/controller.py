"""The Deployment controller (``pkg/controller/deployment``): roll pods between ReplicaSets.

``sync(key)`` reads the Deployment and its ReplicaSets from the caches and, like ``syncDeployment``:

1. claims ReplicaSets (adopt orphans the selector matches, release ours it no longer matches);
2. being deleted → only refresh the status; paused → only scale (and keep the Paused condition);
3. a change of ``replicas`` alone (a scaling event) → scale the ReplicaSets proportionally, no rollout;
4. otherwise roll out by the strategy (``rollout``): find or create the new ReplicaSet
   (named ``<deployment>-<pod-template-hash>``, revision = max old revision + 1), move replicas, delete
   ReplicaSets beyond ``revisionHistoryLimit`` once complete, and write status and conditions.

Every write mutates the working copies in place, so later steps of the same sync see their effect; any
failure ends the sync and the key is retried.  ``kubectl rollout undo`` needs nothing special: it puts an
old ReplicaSet's template back, and step 4 finds that ReplicaSet again and gives it the next revision.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any

from apimachinery.errors import AlreadyExists, NotFound, StatusError
from apimachinery.labels import selector_from_label_selector
from apimachinery.meta import Object
from controllers.deployment import rollout, util
from controllers.support.base import Controller, is_namespace_terminating, unwrap
from controllers.support.controllerref import ControllerRefManager, controller_uid
from controllers.support.podutil import compute_hash, controller_ref, get_condition, meta, now_utc
from kubeclient import DEPLOYMENTS, PODS, REPLICA_SETS, Clientset, EventRecorder, InformerFactory

log = logging.getLogger(__name__)


class DeploymentController(Controller):
    name = "deployment-controller"
    queue_name = "deployment"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.recorder = EventRecorder(clientset.events, "deployment-controller")
        self.d_informer = factory.informer(DEPLOYMENTS)
        self.rs_informer = factory.informer(REPLICA_SETS)
        self.pod_informer = factory.informer(PODS)
        self.informers = [self.d_informer, self.rs_informer, self.pod_informer]
        self.d_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.rs_informer.add_event_handler(self._add_rs, self._update_rs, self._delete_rs)
        self.pod_informer.add_event_handler(on_delete=self._delete_pod)

    # --- handlers ------------------------------------------------------------------------------------------
    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> Object | None:
        if not ref or ref.get("kind") != "Deployment" or not ref.get("controller"):
            return None
        d = self.d_informer.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        return d if d is not None and meta(d).get("uid") == ref.get("uid") else None

    @staticmethod
    def _ref(obj: Object) -> dict[str, Any] | None:
        return next((r for r in meta(obj).get("ownerReferences") or [] if r.get("controller")), None)

    def _matching(self, rs: Object) -> list[Object]:
        labels = meta(rs).get("labels") or {}
        out = []
        for d in self.d_informer.indexer.by_index("namespace", meta(rs).get("namespace") or ""):
            selector = (d.get("spec") or {}).get("selector")
            if selector and selector_from_label_selector(selector).matches(labels):
                out.append(d)
        return out

    def _add_rs(self, rs: Object) -> None:
        if meta(rs).get("deletionTimestamp"):
            return self._delete_rs(rs)
        ref = self._ref(rs)
        if ref is not None:
            d = self._resolve(meta(rs).get("namespace") or "", ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self._matching(rs):
            self.enqueue(d)

    def _update_rs(self, old: Object, cur: Object) -> None:
        if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
            return
        ns = meta(cur).get("namespace") or ""
        old_ref, cur_ref = self._ref(old), self._ref(cur)
        if old_ref != cur_ref and old_ref is not None:
            d = self._resolve(ns, old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self._resolve(ns, cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        if meta(old).get("labels") != meta(cur).get("labels") or old_ref != cur_ref:
            for d in self._matching(cur):
                self.enqueue(d)

    def _delete_rs(self, obj: Any) -> None:
        rs = unwrap(obj)
        d = self._resolve(meta(rs).get("namespace") or "", self._ref(rs))
        if d is not None:
            self.enqueue(d)

    def _delete_pod(self, obj: Any) -> None:
        """Recreate waits for old pods to be gone: their deletion may unblock it."""
        pod = unwrap(obj)
        ns = meta(pod).get("namespace") or ""
        rs_ref = self._ref(pod)
        rs = self.rs_informer.indexer.get_by_key(f"{ns}/{rs_ref.get('name')}") if rs_ref else None
        d = self._resolve(ns, self._ref(rs)) if rs is not None else None
        if d is not None and ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            self.enqueue(d)

    # --- sync ----------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        cached = self.d_informer.indexer.get_by_key(key)
        if cached is None:
            return
        d = copy.deepcopy(cached)
        spec = d.get("spec") or {}
        if spec.get("selector") is not None and not (spec["selector"].get("matchLabels")
                                                     or spec["selector"].get("matchExpressions")):
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")
            if util.status_count(d, "observedGeneration") < int(meta(d).get("generation") or 0):
                await self.update_status(d, {**(d.get("status") or {}),
                                             "observedGeneration": meta(d).get("generation")})
            return
        rss = [copy.deepcopy(rs) for rs in await self._claim_replica_sets(d)]
        if meta(d).get("deletionTimestamp"):
            return await self._sync_status_only(d, rss)
        await self._check_paused_conditions(d)
        if spec.get("paused"):
            return await self._sync_scale(d, rss)
        if await self._is_scaling_event(d, rss):
            return await self._sync_scale(d, rss)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            return await rollout.rollout_recreate(self, d, rss, self._pods_by_rs(d, rss))
        await rollout.rollout_rolling(self, d, rss)

    async def _claim_replica_sets(self, d: Object) -> list[Object]:
        m = meta(d)
        selector = selector_from_label_selector((d.get("spec") or {}).get("selector"))
        manager = ControllerRefManager(
            self.clientset.replica_sets, d, selector, controller_ref(d, "apps/v1", "Deployment"),
            lambda: self.clientset.deployments.get(m["name"], m["namespace"]))
        return await manager.claim(self.rs_informer.indexer.by_index("namespace", m["namespace"]))

    def _pods_by_rs(self, d: Object, rss: list[Object]) -> dict[str, list[Object]]:
        uids = {meta(rs)["uid"] for rs in rss}
        out: dict[str, list[Object]] = {uid: [] for uid in uids}
        for pod in self.pod_informer.indexer.by_index("namespace", meta(d)["namespace"]):
            owner = controller_uid(pod)
            if owner is not None and owner in uids:
                out[owner].append(pod)
        return out

    async def _check_paused_conditions(self, d: Object) -> None:
        if not util.has_progress_deadline(d):
            return
        current = get_condition(d.get("status"), util.PROGRESSING)
        if current is not None and current.get("reason") == util.TIMED_OUT:
            return
        paused_exists = current is not None and current.get("reason") == util.PAUSED
        paused = bool((d.get("spec") or {}).get("paused"))
        status = copy.deepcopy(d.get("status") or {})
        if paused and not paused_exists:
            util.set_condition(status, util.new_condition(util.PROGRESSING, "Unknown", util.PAUSED,
                                                          "Deployment is paused", now_utc()))
        elif not paused and paused_exists:
            util.set_condition(status, util.new_condition(util.PROGRESSING, "Unknown", util.RESUMED,
                                                          "Deployment is resumed", now_utc()))
        else:
            return
        await self.update_status(d, status)

    async def _is_scaling_event(self, d: Object, rss: list[Object]) -> bool:
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rss, create=False)
        for rs in util.active([*old_rss, new_rs]):
            desired = util.annotations_of(rs).get(util.DESIRED_REPLICAS)
            if desired is not None and desired != str(util.spec_replicas(d)):
                return True
        return False

    async def _sync_status_only(self, d: Object, rss: list[Object]) -> None:
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rss, create=False)
        await self._sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def _sync_scale(self, d: Object, rss: list[Object]) -> None:
        """``sync``: scale for a paused deployment or a scaling event, then refresh the status."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rss, create=False)
        await self._scale(d, new_rs, old_rss)
        if (d.get("spec") or {}).get("paused"):
            await rollout.cleanup_deployment(self, old_rss, d)
        await self._sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def _sync_deployment_status(self, all_rss: list[Any], new_rs: Object | None, d: Object) -> None:
        status = util.calculate_status(all_rss, new_rs, d, now_utc())
        if util.compact(d.get("status") or {}) != util.compact(status):
            await self.update_status(d, status)

    async def _scale(self, d: Object, new_rs: Object | None, old_rss: list[Object]) -> None:
        """Bring the ReplicaSets to the Deployment's size: one active → resize it; else proportionally."""
        latest = _active_or_latest(new_rs, old_rss)
        if latest is not None:
            if util.spec_replicas(latest) != util.spec_replicas(d):
                await self.scale_replica_set(latest, util.spec_replicas(d), d)
            return
        if util.is_saturated(d, new_rs):
            for rs in util.active(old_rss):
                await self.scale_replica_set(rs, 0, d)
            return
        if not util.is_rolling(d):
            return
        rss = util.active([*old_rss, new_rs])
        allowed = util.spec_replicas(d) + util.max_surge(d) if util.spec_replicas(d) > 0 else 0
        to_add = allowed - util.total_spec(rss)
        if to_add != 0:  # larger first; ties: newer first when growing, older first when shrinking
            rss.sort(key=lambda r: meta(r).get("creationTimestamp") or "", reverse=to_add > 0)
            rss.sort(key=util.spec_replicas, reverse=True)
        added, sizes = 0, {}
        for rs in rss:
            share = util.proportion(rs, d, to_add, added) if to_add else 0
            sizes[meta(rs)["name"]] = util.spec_replicas(rs) + share
            added += share
        for i, rs in enumerate(rss):
            size = sizes[meta(rs)["name"]]
            if i == 0 and to_add:
                size = max(size + to_add - added, 0)
            await self.scale_replica_set(rs, size, d)

    # --- writes shared with the rollouts -------------------------------------------------------------------
    async def get_all_replica_sets_and_sync_revision(self, d: Object, rss: list[Object], *,
                                                     create: bool) -> tuple[Object | None, list[Object]]:
        found = util.find_new_replica_set(d, rss)
        old_rss = [rs for rs in rss if rs is not found]
        new_rs = await self._get_new_replica_set(d, rss, old_rss, found, create)
        return new_rs, old_rss

    async def _get_new_replica_set(self, d: Object, rss: list[Object], old_rss: list[Object],
                                   found: Object | None, create: bool) -> Object | None:
        new_revision = util.max_revision(old_rss) + 1
        spec = d.get("spec") or {}
        status = copy.deepcopy(d.get("status") or {})
        if found is not None:
            annotated = util.set_new_rs_annotations(d, found, new_revision, exists=True)
            min_ready = spec.get("minReadySeconds") or 0
            if annotated or ((found.get("spec") or {}).get("minReadySeconds") or 0) != min_ready:
                found["spec"]["minReadySeconds"] = min_ready
                _replace(found, await self.clientset.replica_sets.update(found))
                return found
            needs_update = await self._set_deployment_revision(d, util.annotations_of(found).get(util.REVISION, ""))
            if util.has_progress_deadline(d) and get_condition(status, util.PROGRESSING) is None:
                util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.FOUND_NEW_RS,
                                                              f'Found new replica set "{meta(found)["name"]}"',
                                                              now_utc()))
                needs_update = True
            if needs_update:
                await self.update_status(d, status)
            return found
        if not create:
            return None
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = compute_hash(template, status.get("collisionCount"))
        template.setdefault("metadata", {}).setdefault("labels", {})[util.POD_TEMPLATE_HASH] = pod_hash
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[util.POD_TEMPLATE_HASH] = pod_hash
        name = f"{meta(d)['name']}-{pod_hash}"
        rs: Object = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": meta(d)["namespace"],
                         "labels": dict(template["metadata"]["labels"]),
                         "ownerReferences": [controller_ref(d, "apps/v1", "Deployment")]},
            "spec": {"replicas": 0, "minReadySeconds": spec.get("minReadySeconds") or 0, "selector": selector,
                     "template": template},
        }
        rs["spec"]["replicas"] = util.new_rs_new_replicas(d, [*old_rss, rs], rs)
        util.set_new_rs_annotations(d, rs, new_revision, exists=False)
        already_exists = False
        try:
            created = await self.clientset.replica_sets.create(rs)
        except AlreadyExists:
            existing = self.rs_informer.indexer.get_by_key(f"{meta(d)['namespace']}/{name}")
            if existing is not None and controller_uid(existing) == meta(d)["uid"] and \
                    util.equal_ignore_hash(spec.get("template") or {},
                                           (existing.get("spec") or {}).get("template") or {}):
                created, already_exists = copy.deepcopy(existing), True
            else:  # a hash collision: bump collisionCount so the next sync hashes differently
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                await self.update_status(d, status)
                raise
        except StatusError as err:
            if is_namespace_terminating(err):
                raise
            message = f'Failed to create new replica set "{name}": {err.message}'
            if util.has_progress_deadline(d):
                util.set_condition(status, util.new_condition(util.PROGRESSING, "False", util.FAILED_RS_CREATE,
                                                              message, now_utc()))
                await self.update_status(d, status)
            self.recorder.event(d, "Warning", util.FAILED_RS_CREATE, message)
            raise
        replicas = util.spec_replicas(created)
        if not already_exists and replicas > 0:
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled up replica set {meta(created)['name']} from 0 to {replicas}")
        needs_update = await self._set_deployment_revision(d, str(new_revision))
        if not already_exists and util.has_progress_deadline(d):
            util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.NEW_RS_CREATED,
                                                          f'Created new replica set "{meta(created)["name"]}"',
                                                          now_utc()))
            needs_update = True
        if needs_update:
            await self.update_status(d, status)
        rss.append(created)
        return created

    async def _set_deployment_revision(self, d: Object, revision: str) -> bool:
        """Record the new ReplicaSet's revision on the Deployment (``SetDeploymentRevision``).

        Kubernetes writes it with a status update (``deployments/status`` keeps only spec and labels as
        stored).  If the apiserver drops the annotation from a status update, it is patched onto the object
        instead.  Returns whether a status write is still wanted (never: it was written here).
        """
        if not revision or util.annotations_of(d).get(util.REVISION) == revision:
            return False
        m = meta(d)
        wanted = copy.deepcopy(d)
        wanted["metadata"].setdefault("annotations", {})[util.REVISION] = revision
        updated = await self.clientset.deployments.update_status(wanted)
        if util.annotations_of(updated).get(util.REVISION) != revision:
            updated = await self.clientset.deployments.patch(
                m["name"], {"metadata": {"annotations": {util.REVISION: revision}}}, "merge", m["namespace"])
        status = d.get("status")
        _replace(d, updated)
        if status is not None:
            d["status"] = status
        return False

    async def scale_replica_set(self, rs: Object, size: int, d: Object) -> bool:
        """Resize ``rs`` (and stamp desired/max replicas); True and a ScalingReplicaSet event if the size moved."""
        old = util.spec_replicas(rs)
        size_changed = old != size
        max_replicas = util.spec_replicas(d) + util.max_surge(d)
        if not size_changed and not util.replicas_annotations_need_update(rs, util.spec_replicas(d), max_replicas):
            return False
        rs.setdefault("spec", {})["replicas"] = size
        util.set_replicas_annotations(rs, util.spec_replicas(d), max_replicas)
        _replace(rs, await self.clientset.replica_sets.update(rs))
        if size_changed:
            direction = "up" if old < size else "down"
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {direction} replica set {meta(rs)['name']} from {old} to {size}")
        return size_changed

    async def delete_replica_set(self, rs: Object) -> None:
        m = meta(rs)
        with contextlib.suppress(NotFound):
            await self.clientset.replica_sets.delete(m["name"], m["namespace"],
                                                     preconditions={"uid": m["uid"]})

    async def update_status(self, d: Object, status: dict[str, Any]) -> None:
        updated = await self.clientset.deployments.update_status({**d, "status": status})
        _replace(d, updated)


def _replace(target: Object, new: Object) -> None:
    """Make the working copy ``target`` the object the server returned (later steps see the write)."""
    target.clear()
    target.update(new)


def _active_or_latest(new_rs: Object | None, old_rss: list[Object]) -> Object | None:
    """The only active ReplicaSet, or the newest if none is active; None if several are (``FindActiveOrLatest``)."""
    if new_rs is None and not old_rss:
        return None
    olds = util.by_creation(old_rss, newest_first=True)
    act = util.active([*olds, new_rs])
    if not act:
        return new_rs if new_rs is not None else olds[0]
    return act[0] if len(act) == 1 else None
