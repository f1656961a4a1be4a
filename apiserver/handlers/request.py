"""What a request asks for: the resource path (``RequestInfo``), body decoding and content negotiation.

Path rules follow kube-apiserver's RequestInfoFactory::

    /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]

``/api/v1/namespaces/{name}/status`` and ``/finalize`` are subresources of the namespace itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from apimachinery import errors

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

JSON = "application/json"
YAML = "application/yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"  # kubectl's typed clients; decoded by apiserver.protobuf
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH)


@dataclass(slots=True)
class RequestInfo:
    group: str
    version: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    watch_path: bool = False  # the deprecated /watch/ prefix


def parse_path(group: str, version: str, rest: str) -> RequestInfo:
    parts = [p for p in rest.split("/") if p]
    watch_path = False
    if parts and parts[0] == "watch":
        watch_path = True
        parts = parts[1:]
    if not parts:
        raise errors.NotFound("the server could not find the requested resource")
    namespace: str | None = None
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
        else:
            namespace = None
    if len(parts) > 3:
        raise errors.NotFound("the server could not find the requested resource")
    info = RequestInfo(group, version, parts[0], namespace, watch_path=watch_path)
    if len(parts) > 1:
        info.name = parts[1]
    if len(parts) > 2:
        info.subresource = parts[2]
    return info


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def decode_body(body: bytes, content_type: str | None, allowed: tuple[str, ...] = (JSON, YAML, PROTOBUF)) -> Any:
    """Decode a request body; 415 for an unsupported content type, 400 for a malformed body, 413 if too big."""
    if len(body) > MAX_BODY_BYTES:
        raise errors.RequestEntityTooLarge("Request entity too large: limit is 3145728")
    mt = media_type(content_type) or JSON
    if mt not in allowed:
        raise errors.UnsupportedMediaType(
            f'the body of the request was in an unknown format - accepted media types include: '
            f'{", ".join(allowed)}')
    if not body.strip():
        raise errors.BadRequest("the body of the request is empty")
    if mt == PROTOBUF:
        from apiserver.protobuf import decode as decode_protobuf  # imported on first use: the schema is large

        return decode_protobuf(body)
    try:
        if mt == YAML or mt == APPLY_PATCH:
            return yaml.safe_load(body)
        return orjson.loads(body)
    except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as err:
        raise errors.BadRequest(f"the body of the request could not be decoded: {_first_line(err)}") from None


def decode_object(body: bytes, content_type: str | None, kind: str, api_version: str) -> dict[str, Any]:
    """A body that must be one object of ``kind``: wrong shapes are 400, as the Go decoder reports them."""
    obj = decode_body(body, content_type)
    if not isinstance(obj, dict):
        raise errors.BadRequest(f'{kind} in version "{api_version.split("/")[-1]}" cannot be handled as a {kind}: '
                                f"the body must be a JSON object")
    body_kind = obj.get("kind")
    if body_kind and body_kind != kind:
        raise errors.BadRequest(f'{kind} in version "{api_version.split("/")[-1]}" cannot be handled as a {kind}: '
                                f'the kind "{body_kind}" does not match the expected kind "{kind}"')
    body_version = obj.get("apiVersion")
    if body_version and body_version != api_version:
        raise errors.BadRequest(f'the API version in the data ({body_version}) does not match the expected API '
                                f'version ({api_version})')
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.BadRequest(f'{kind} in version "{api_version.split("/")[-1]}" cannot be handled as a {kind}: '
                                f"metadata must be an object")
    return obj


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


@dataclass(slots=True)
class Output:
    """How to render a response, from the Accept header: plain objects or a meta.k8s.io Table."""

    table: bool = False
    partial_metadata: bool = False


def negotiate(accept: str | None) -> Output:
    """Pick the first acceptable representation (kubectl asks ``as=Table`` first, then plain JSON)."""
    if not accept:
        return Output()
    supported_plain = False
    for clause in accept.split(","):
        params = [p.strip() for p in clause.split(";")]
        mt = params[0].lower()
        opts = dict(p.split("=", 1) for p in params[1:] if "=" in p)
        if mt not in (JSON, "*/*", "application/*", YAML):
            continue
        kind = opts.get("as")
        if kind == "Table" and opts.get("g") == "meta.k8s.io" and opts.get("v") in ("v1", "v1beta1"):
            return Output(table=True)
        if kind in ("PartialObjectMetadata", "PartialObjectMetadataList") and opts.get("g") == "meta.k8s.io":
            return Output(partial_metadata=True)
        if kind is None:
            supported_plain = True
            break
    if not supported_plain:
        if any(media_type(c) in ("application/vnd.kubernetes.protobuf", "application/protobuf")
               for c in accept.split(",")) or "as=" in accept:
            raise errors.NotAcceptable("only the following media types are accepted: application/json, "
                                       "application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io")
    return Output()


def int_param(params: Any, name: str) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        raise errors.BadRequest(f'invalid value for query parameter {name}: "{value}" is not an integer') from None
    if not INT64_MIN <= number <= INT64_MAX:  # kube's query parameters are int64 (strconv.ParseInt's range)
        raise errors.BadRequest(f'invalid value for query parameter {name}: "{value}" is out of range')
    return number


def bool_param(params: Any, name: str) -> bool:
    return (params.get(name) or "").lower() in ("true", "1")
