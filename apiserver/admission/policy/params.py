"""The parameter objects of a binding (``paramRef``), read from the watch cache of the ``paramKind``'s resource.

As kube: a namespaced paramKind without ``paramRef.namespace`` takes the request's namespace (a cluster-scoped
request cannot use one); ``name`` picks one object, ``selector`` every object whose labels match (possibly none).
"""

from __future__ import annotations

from ..attributes import Attributes, Object
from ..matching import labels_match
from ..sources import Sources


class ParamsError(Exception):
    """The binding cannot be configured (its text goes after ``failed to configure binding: ``)."""


def params_for(policy: Object, binding: Object, attrs: Attributes, sources: Sources) -> list[Object | None]:
    """The parameter objects to evaluate the policy with: ``[None]`` without a paramKind, ``[]`` when none was
    found and the binding allows that (``parameterNotFoundAction: Allow``)."""
    kind = (policy.get("spec") or {}).get("paramKind")
    if not kind:
        return [None]
    ref = (binding.get("spec") or {}).get("paramRef")
    if not ref:
        raise ParamsError(f"paramKind kind `{kind.get('kind')}.{kind.get('apiVersion')}` is defined, but no "
                          f"paramRef is set")
    group, _, version = str(kind.get("apiVersion") or "").rpartition("/")
    store = sources.find(group, version, kind.get("kind") or "")
    if store is None:
        raise ParamsError(f"failed to find resource referenced by paramKind: '{kind.get('apiVersion')}, "
                          f"Kind={kind.get('kind')}'")
    resource = store.strategy.resource
    namespace: str | None = None
    if store.strategy.namespaced:
        namespace = ref.get("namespace") or attrs.namespace
        if not namespace:
            raise ParamsError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                              "resources")
    found: list[Object | None]
    if ref.get("name"):
        obj = sources.get(group, resource, namespace, ref["name"])
        found = [obj] if obj is not None else []
    else:
        found = [o for o in sources.list(group, resource, namespace)
                 if labels_match(ref.get("selector"), o["metadata"].get("labels"))]
    if not found and ref.get("parameterNotFoundAction") != "Allow":
        raise ParamsError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return found
