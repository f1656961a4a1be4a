"""The CEL environment of admission: the variables kube declares and their values for one request.

``object``, ``oldObject`` (null where the operation has none), ``request`` (the AdmissionRequest's fields),
``params`` (a policy's parameter object, else null), ``namespaceObject`` (the request's Namespace, null for
cluster-scoped resources), ``authorizer`` (answered by the apiserver's authorizer for the requesting user) and
``variables`` (a policy's named variables). Compiled programs are cached by expression, since the same rules are
evaluated on every request.
"""

from __future__ import annotations

from typing import Any

from .. import cel
from .attributes import Attributes, Object
from .sources import Sources

BASE_VARIABLES = ("object", "oldObject", "request", "authorizer")
POLICY_VARIABLES = (*BASE_VARIABLES, "params", "namespaceObject", "variables")


compiled = cel.compile_cached


def request_value(attrs: Attributes) -> Object:
    """``request``: the AdmissionRequest as CEL sees it."""
    request: Object = {
        "kind": attrs.kind_dict(), "resource": attrs.resource_dict(), "subResource": attrs.subresource,
        "requestKind": attrs.kind_dict(), "requestResource": attrs.resource_dict(),
        "requestSubResource": attrs.subresource, "name": attrs.name, "namespace": attrs.namespace,
        "operation": attrs.operation, "userInfo": attrs.user.to_dict(), "dryRun": attrs.dry_run,
        "options": attrs.options,
    }
    return request


def activation(attrs: Attributes, sources: Sources | None = None, params: Object | None = None) -> dict[str, Any]:
    """The variables' values for ``attrs`` (``namespaceObject`` needs ``sources``)."""
    values: dict[str, Any] = {"object": attrs.obj, "oldObject": attrs.old, "request": request_value(attrs),
                              "authorizer": cel.authorizer(attrs.user), "params": params, "namespaceObject": None}
    if sources is not None and attrs.namespace and attrs.namespaced:
        values["namespaceObject"] = sources.get("", "namespaces", None, attrs.namespace)
    return values
