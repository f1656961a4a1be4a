"""OpenAPI v2 definitions and paths for the served custom resources (kube's ``builder.BuildOpenAPIV2``).

Each served version gets a definition named as kube names it (the group reversed, the version, the kind:
``com.example.stable.v1.CronTab``) holding the CRD's schema with ``apiVersion``, ``kind`` and ``metadata``
(ObjectMeta) added, a ``<Kind>List``, and the same REST paths a built-in resource has — taken from a built-in
resource's paths (Deployments': every verb, ``/status`` and ``/scale``) with the names swapped, so the operations
carry the same parameters (``fieldValidation`` among them, which tells kubectl to validate on the server) and
``x-kubernetes-group-version-kind``. Strategic merge is not offered for custom resources. The v3 documents are
derived from these as for every other group-version.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from .strategy import CustomResourceStrategy

Json = dict[str, Any]
TEMPLATE_GROUP, TEMPLATE_KIND, TEMPLATE_PLURAL = "apps", "Deployment", "deployments"
TEMPLATE_DEFINITION = "io.k8s.api.apps.v1.Deployment"
STRATEGIC = "application/strategic-merge-patch+json"
V2_DROPPED = ("nullable", "oneOf", "anyOf", "allOf", "not", "x-kubernetes-validations")


def definition_name(group: str, version: str, kind: str) -> str:
    return ".".join([*reversed(group.split(".")), version, kind])


def custom_openapi(swagger: Json, strategies: list[CustomResourceStrategy]) -> tuple[dict[str, Json], dict[str, Json]]:
    """(definitions, paths) to add to the built-in document for these served versions."""
    definitions: dict[str, Json] = {}
    paths: dict[str, Json] = {}
    for s in strategies:
        name = definition_name(s.group, s.version, s.kind)
        definitions[name] = _kind_definition(s)
        definitions[f"{name}List"] = _list_definition(s, name)
        paths.update(_paths(swagger["paths"], s, name))
    return definitions, paths


def _kind_definition(s: CustomResourceStrategy) -> Json:
    schema: Json = _to_v2(copy.deepcopy(s.schema)) if s.schema else {"type": "object"}
    props: Json = schema.setdefault("properties", {})
    props["apiVersion"] = {"description": "APIVersion defines the versioned schema of this representation of an "
                                          "object. Servers should convert recognized schemas to the latest internal "
                                          "value, and may reject unrecognized values. More info: https://git.k8s.io/"
                                          "community/contributors/devel/sig-architecture/api-conventions.md"
                                          "#resources", "type": "string"}
    props["kind"] = {"description": "Kind is a string value representing the REST resource this object "
                                    "represents. Servers may infer this from the endpoint the client submits "
                                    "requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/"
                                    "community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                     "type": "string"}
    props["metadata"] = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                         "description": "Standard object's metadata. More info: https://git.k8s.io/community/"
                                        "contributors/devel/sig-architecture/api-conventions.md#metadata"}
    schema["type"] = "object"
    schema["x-kubernetes-group-version-kind"] = [{"group": s.group, "kind": s.kind, "version": s.version}]
    return schema


def _list_definition(s: CustomResourceStrategy, name: str) -> Json:
    return {"description": f"{s.list_kind} is a list of {s.kind}",
            "properties": {
                "apiVersion": {"type": "string"},
                "items": {"description": f"List of {s.resource}. More info: https://git.k8s.io/community/"
                                         f"contributors/devel/sig-architecture/api-conventions.md",
                          "items": {"$ref": f"#/definitions/{name}"}, "type": "array"},
                "kind": {"type": "string"},
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}},
            "required": ["items"], "type": "object",
            "x-kubernetes-group-version-kind": [{"group": s.group, "kind": s.list_kind, "version": s.version}]}


def _to_v2(schema: Any) -> Any:
    """What OpenAPI v2 can say of a structural schema (kube drops the rest for v2 clients)."""
    if isinstance(schema, list):
        return [_to_v2(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _to_v2(v) for k, v in schema.items() if k not in V2_DROPPED}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    return out


def _camel(group: str, version: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in reversed(group.replace("-", ".").split("."))) + \
        version[:1].upper() + version[1:]


def _paths(template: dict[str, Json], s: CustomResourceStrategy, name: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    prefix = f"/apis/{TEMPLATE_GROUP}/v1/"
    for path, item in template.items():
        if not path.startswith(prefix) or f"/{TEMPLATE_PLURAL}" not in path:
            continue
        if path.endswith("/status") and "status" not in s.subresources:
            continue
        if path.endswith("/scale") and "scale" not in s.subresources:
            continue
        new_path = path
        if not s.namespaced:
            if "/namespaces/{namespace}/" not in path:
                continue  # the all-namespaces list: the cluster-scoped collection takes its place
            new_path = path.replace("/namespaces/{namespace}", "")
        text = orjson.dumps(item).decode()
        text = text.replace(f'"#/definitions/{TEMPLATE_DEFINITION}List"', f'"#/definitions/{name}List"')
        text = text.replace(f'"#/definitions/{TEMPLATE_DEFINITION}"', f'"#/definitions/{name}"')
        text = text.replace(f'"group":"{TEMPLATE_GROUP}","kind":"{TEMPLATE_KIND}","version":"v1"',
                            f'"group":"{s.group}","kind":"{s.kind}","version":"{s.version}"')
        text = text.replace("AppsV1", _camel(s.group, s.version)).replace("apps_v1", f"{s.group}_{s.version}")
        text = text.replace(TEMPLATE_KIND, s.kind).replace(TEMPLATE_PLURAL, s.resource)
        converted: Json = orjson.loads(text)
        if not s.namespaced:
            converted = _without_namespace(converted)
            for op in converted.values():
                if isinstance(op, dict) and "operationId" in op:
                    op["operationId"] = op["operationId"].replace("Namespaced", "")
        patch = converted.get("patch")
        if isinstance(patch, dict):
            patch["consumes"] = [c for c in patch.get("consumes", []) if c != STRATEGIC]
        new_path = new_path.replace(prefix, f"/apis/{s.group}/{s.version}/").replace(f"/{TEMPLATE_PLURAL}",
                                                                                     f"/{s.resource}")
        out[new_path] = converted
    return out


def _without_namespace(item: Json) -> Json:
    def keep(p: Any) -> bool:
        return not (isinstance(p, dict) and p.get("name") == "namespace" and p.get("in") == "path")

    if "parameters" in item:
        item["parameters"] = [p for p in item["parameters"] if keep(p)]
    for op in item.values():
        if isinstance(op, dict) and "parameters" in op:
            op["parameters"] = [p for p in op["parameters"] if keep(p)]
    return item
