"""ControllerRevisions (apps/v1): immutable snapshots of a workload's template, the history behind
``kubectl rollout history`` and ``kubectl rollout undo`` of a DaemonSet.

The daemonset controller writes them: ``data`` is a strategic merge patch that puts the template back, and
``revision`` orders them (it is raised when an old revision becomes current again, after an undo).  What
kube-apiserver checks (``ValidateControllerRevisionCreate`` / ``Update``): ``data`` is required and immutable,
``revision`` is non-negative.  ``kubectl get controllerrevisions`` prints NAME CONTROLLER REVISION AGE, the
controller as ``daemonset.apps/<name>``.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import required, validate_immutable, validate_nonnegative
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since


class ControllerRevisionStrategy(Strategy):
    group = "apps"
    kind = "ControllerRevision"
    resource = "controllerrevisions"
    singular = "controllerrevision"
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        causes = [required("data", "data is mandatory")] if obj.get("data") is None else []
        return causes + validate_nonnegative(obj.get("revision"), "revision")

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + validate_immutable(new.get("data"), old.get("data"), "data")

    def spec_changed(self, new: Object, old: Object) -> bool:
        return False

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Controller", description="Controller of the object"),
                TableColumn("Revision", description="Revision indicates the revision of the state represented by "
                                                    "Data."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), _controller_cell(metadata), int(obj.get("revision") or 0),
                since(metadata.get("creationTimestamp"))]


def _controller_cell(metadata: Object) -> str:
    """``<kind>.<group>/<name>`` of the controller ownerReference (``formatResourceName`` with kind), or <none>."""
    ref = next((r for r in metadata.get("ownerReferences") or [] if r.get("controller")), None)
    if ref is None:
        return "<none>"
    api_version = ref.get("apiVersion") or ""
    group = api_version.split("/")[0] if "/" in api_version else ""
    kind = (ref.get("kind") or "").lower()
    return f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
