"""The admission chain: mutating plugins in order, then validating plugins, for one request at a time.

``AdmissionChain.request`` binds the chain to a request's fixed facts (operation, resource, user, dry run,
options); the store then calls ``mutate`` and ``validate`` with the object as it stands at each point (after
defaulting and validation, and for updates on every retry of its read-modify-write, as kube-apiserver's admission
runs inside ``GuaranteedUpdate``). A plugin refuses by raising a ``StatusError``. Plugins say cheaply whether a
resource (``concerns``) and a request (``handles``) concern them, so a cluster without webhooks or policies pays
almost nothing, and the always-on plugin (Priority) costs only the writes of pods and PriorityClasses.

The admissionregistration.k8s.io objects themselves are exempt, as in kube, so a broken webhook can always be
removed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from ..authentication import request_user
from .attributes import Attributes, Object, Operation

EXEMPT_GROUP = "admissionregistration.k8s.io"


class Plugin(Protocol):
    """What the chain asks every plugin, mutating or validating, before it calls it."""

    def configured(self) -> bool:
        """Whether any configuration exists at all (nothing configured: the plugin never acts). Asked during the
        request, so a plugin that acts only for some users may answer for the requesting one."""

    def concerns(self, group: str, resource: str) -> bool:
        """Whether requests to this resource can ever need the plugin (cheap: checked on every write)."""

    def handles(self, attrs: Attributes) -> bool:
        """Whether the plugin has anything to do for this request (no configuration: False)."""


class MutatingPlugin(Plugin, Protocol):
    async def admit(self, attrs: Attributes) -> None:
        """Change ``attrs.obj`` (replace it) or refuse with a StatusError."""


class ValidatingPlugin(Plugin, Protocol):
    async def validate(self, attrs: Attributes) -> None:
        """Accept (return) or refuse (raise a StatusError); never change the object."""


def _check_protocol(plugins: list[Any], methods: tuple[str, ...]) -> None:
    """A plugin missing a method of its protocol would fail every write it is asked about: refuse it at start."""
    for plugin in plugins:
        missing = [name for name in methods if not callable(getattr(plugin, name, None))]
        if missing:
            raise TypeError(f"admission plugin {type(plugin).__name__} lacks {', '.join(missing)}")


class AdmissionChain:
    """kube-apiserver's admission plugin order for the dynamic plugins: mutating, then validating."""

    def __init__(self, mutating: list[MutatingPlugin], validating: list[ValidatingPlugin]) -> None:
        _check_protocol(mutating, ("configured", "concerns", "handles", "admit"))
        _check_protocol(validating, ("configured", "concerns", "handles", "validate"))
        self.mutating = mutating
        self.validating = validating
        self._plugins: tuple[Plugin, ...] = (*mutating, *validating)

    def configured(self) -> bool:
        """Whether any plugin could act: callers skip work done only for admission (reading an old Scale)."""
        return any(plugin.configured() for plugin in self._plugins)

    def configured_for(self, group: str, resource: str) -> bool:
        """Whether any plugin could act on a write to this resource: without one the request skips admission (the
        always-on plugins, Priority, concern only their own resources)."""
        return any(plugin.configured() and plugin.concerns(group, resource) for plugin in self._plugins)

    def request(self, *, operation: Operation, strategy: Any, namespace: str | None, name: str,
                subresource: str = "", dry_run: bool = False, options: Object | None = None,
                kind: tuple[str, str, str] | None = None) -> RequestAdmission | None:
        """The admission of one request to ``strategy``'s resource, or None when it is exempt. ``kind`` (group,
        version, kind) is the object's when it is not the resource's (PodExecOptions, Scale, Eviction…)."""
        if strategy.group == EXEMPT_GROUP:
            return None
        if strategy.group == "" and strategy.resource == "namespaces":
            namespace = name
        base = Attributes(operation, strategy.group, strategy.version, strategy.resource, subresource,
                          kind[2] if kind else strategy.kind, namespace or "", name, strategy.namespaced,
                          request_user(), dry_run, options)
        if kind is not None:
            base.kind_group, base.kind_version = kind[0], kind[1]
        return RequestAdmission(self, base)


class RequestAdmission:
    """The chain bound to one request: what ``ResourceStore`` calls (its ``Admission`` protocol)."""

    def __init__(self, chain: AdmissionChain, base: Attributes) -> None:
        self.chain = chain
        self.base = base

    def _attributes(self, obj: Object | None, old: Object | None) -> Attributes:
        name = self.base.name or ((obj or old or {}).get("metadata") or {}).get("name", "")
        namespace = self.base.namespace
        if self.base.group == "" and self.base.resource == "namespaces":
            namespace = name
        return replace(self.base, obj=obj, old=old, name=name, namespace=namespace)

    async def mutate(self, obj: Object | None, old: Object | None) -> Object | None:
        """Run every mutating plugin that handles the request, in order; the (possibly new) object."""
        attrs = self._attributes(obj, old)
        for plugin in self.chain.mutating:
            if plugin.handles(attrs):
                await plugin.admit(attrs)
        return attrs.obj

    async def validate(self, obj: Object | None, old: Object | None) -> None:
        """Run the validating plugins in order (each may work in parallel inside); the first refusal stops."""
        attrs = self._attributes(obj, old)
        for plugin in self.chain.validating:
            if plugin.handles(attrs):
                await plugin.validate(attrs)
