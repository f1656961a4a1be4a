"""What an admission plugin sees of one request (kube's ``admission.Attributes``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..authentication import UserInfo

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
Object = dict[str, Any]



@dataclass(slots=True)
class Attributes:
    """One request as admission sees it. ``obj`` is what mutating plugins change; ``old`` is the stored object
    (UPDATE, DELETE). ``namespace`` is the object's namespace, or the namespace's own name for namespaces."""

    operation: Operation
    group: str
    version: str
    resource: str
    subresource: str
    kind: str
    namespace: str
    name: str
    namespaced: bool
    user: UserInfo
    dry_run: bool = False
    options: Object | None = None
    obj: Object | None = None
    old: Object | None = None
    # The object's group and version when its kind is not the resource's (Scale: autoscaling/v1).
    kind_group: str | None = None
    kind_version: str | None = None

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def resource_dict(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}

    def kind_dict(self) -> dict[str, str]:
        group = self.group if self.kind_group is None else self.kind_group
        version = self.version if self.kind_version is None else self.kind_version
        return {"group": group, "version": version, "kind": self.kind}


def options_for(kind: str, field_manager: str | None = None, dry_run: bool = False) -> Object:
    """The ``options`` object of an AdmissionReview: ``meta.k8s.io/v1`` CreateOptions, UpdateOptions (PUT),
    PatchOptions (PATCH, whose operation is UPDATE) or DeleteOptions."""
    options: Object = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        options["dryRun"] = ["All"]
    if field_manager and kind != "DeleteOptions":
        options["fieldManager"] = field_manager
    return options
