"""What a request asks for: the resource path (``RequestInfo``), body decoding and content negotiation.

Path rules follow kube-apiserver's RequestInfoFactory::

    /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]

``/api/v1/namespaces/{name}/status`` and ``/finalize`` are subresources of the namespace itself; after
``{name}/proxy`` the rest of the path is the proxied path (``proxy_path``).

Bodies are bounded as kube-apiserver bounds them: 3 MiB (413, refused as it arrives), and a nesting depth
(``MAX_DEPTH``, 400); YAML is read as sigs.k8s.io/yaml reads it (through JSON, so ``2.0`` is the integer 2). Query
parameters convert as kube's parameter codec converts them (``int_param``, ``bool_param``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from apimachinery import errors, yamlload
from apimachinery.validation import not_supported

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
# Nesting of objects and arrays a body may have. kube's decoders stop at 10000; ours must stop where the rest of
# the server can still walk and encode the object (orjson encodes at most 254 levels, Python recursion ~1000).
MAX_DEPTH = 200
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

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
    proxy_path: str = ""  # ``…/{name}/proxy/{path}``: the path relayed (with its trailing slash)


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
    proxy_path = ""
    if len(parts) > 3 and parts[2] == "proxy":  # {resource}/{name}/proxy/{path...}: the path is the proxy's
        proxy_path = "/" + "/".join(parts[3:]) + ("/" if rest.endswith("/") else "")
        parts = parts[:3]
    elif len(parts) == 3 and parts[2] == "proxy" and rest.endswith("/"):
        proxy_path = "/"
    if len(parts) > 3:
        raise errors.NotFound("the server could not find the requested resource")
    info = RequestInfo(group, version, parts[0], namespace, watch_path=watch_path, proxy_path=proxy_path)
    if len(parts) > 1:
        info.name = parts[1]
    if len(parts) > 2:
        info.subresource = parts[2]
    return info


def limit_body(scope: dict[str, Any], receive: Any, limit: int = MAX_BODY_BYTES) -> Any:
    """An ASGI ``receive`` that refuses a body over ``limit`` bytes with 413 as kube's ``limitedReadBody`` does: at
    once when Content-Length says so, else as soon as the bytes received pass it — never reading it all first."""
    for name, value in scope.get("headers") or ():
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise _too_large(limit)
    received = 0

    async def limited() -> Any:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise _too_large(limit)
        return message

    return limited


def _too_large(limit: int) -> errors.StatusError:
    return errors.RequestEntityTooLarge(f"Request entity too large: limit is {limit}")


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def decode_body(body: bytes, content_type: str | None, allowed: tuple[str, ...] = (JSON, YAML, PROTOBUF)) -> Any:
    """Decode a request body; 415 for an unsupported content type, 400 for a malformed body, 413 if too big."""
    if len(body) > MAX_BODY_BYTES:
        raise _too_large(MAX_BODY_BYTES)
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
    if mt in (YAML, APPLY_PATCH):
        return load_yaml(body)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        if "depth limit" in str(err) or "recursion limit" in str(err).lower():
            raise _too_deep("json") from None
        raise errors.BadRequest(f"the body of the request could not be decoded: {_first_line(err)}") from None
    # Depth can only exceed the limit when there are more brackets than the limit: the walk is rarely needed.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and depth_exceeds(data, MAX_DEPTH):
        raise _too_deep("json")
    return data


def load_yaml(body: bytes) -> Any:
    """YAML as kube reads it (sigs.k8s.io/yaml: YAML → JSON → the Go decoder): a number without a fraction is
    an integer there (``replicas: 2.0`` is 2), one past 64 bits a float; nesting past ``MAX_DEPTH`` is a 400."""
    try:
        data = yamlload.safe_load(body)  # libyaml: no Python recursion while parsing
    except RecursionError:
        raise _too_deep("yaml") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        if "nesting depth" in str(err):
            raise _too_deep("yaml") from None
        raise errors.BadRequest(f"the body of the request could not be decoded: {_first_line(err)}") from None
    if depth_exceeds(data, MAX_DEPTH):
        raise _too_deep("yaml")
    return json_numbers(data)


_INT64 = (-(2**63), 2**64 - 1)


def json_numbers(value: Any) -> Any:
    """Numbers as the JSON round trip leaves them: integral floats in int64 range are ints, ints past uint64
    floats (what orjson makes of such a JSON literal)."""
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, item in items:
            if isinstance(item, float) and item.is_integer() and -(2.0**63) <= item < 2.0**63:
                node[key] = int(item)
            elif isinstance(item, int) and not isinstance(item, bool) and not _INT64[0] <= item <= _INT64[1]:
                try:
                    node[key] = float(item)
                except OverflowError:  # past float64 too: what Go's JSON encoder says of +Inf
                    raise errors.BadRequest("the body of the request could not be decoded: error converting YAML "
                                            "to JSON: json: unsupported value: +Inf") from None
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether objects and arrays nest deeper than ``limit`` (iteratively: the input may be deep)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _too_deep(codec: str) -> errors.StatusError:
    return errors.BadRequest(f"the body of the request could not be decoded: {codec}: exceeded max depth of "
                             f"{MAX_DEPTH}")


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


def _first_line(err: BaseException) -> str:
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
    if not supported_plain and (any(media_type(c) in ("application/vnd.kubernetes.protobuf", "application/protobuf")
           for c in accept.split(",")) or "as=" in accept):
        raise errors.NotAcceptable("only the following media types are accepted: application/json, "
                                   "application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io")
    return Output()


INT64_MAX = 2**63 - 1


def parse_int64(value: str) -> int:
    """Go's ``strconv.ParseInt(value, 10, 64)``, its error a 400 as kube's parameter conversion reports it."""
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        raise errors.BadRequest(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -INT64_MAX - 1 <= number <= INT64_MAX:
        raise errors.BadRequest(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def int_param(params: Any, name: str) -> int | None:
    """An integer query parameter (Go ``*int64``); None when absent or empty."""
    value = params.get(name)
    return None if value in (None, "") else parse_int64(value)


def bool_param(params: Any, name: str) -> bool:
    """kube's ``Convert_Slice_string_To_bool``: absent, ``0`` or ``false`` (any case) is false, any other value
    — even an empty one — true."""
    value = params.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def dry_run_requested(params: Any, options_kind: str = "CreateOptions") -> bool:
    """``?dryRun``: only ``All`` is supported; anything else is 422 ``<options_kind>.meta.k8s.io`` as kube's
    ``ValidateDryRun`` answers for Create/Update/Patch/DeleteOptions."""
    values = params.getlist("dryRun") if hasattr(params, "getlist") else \
        [v for v in [params.get("dryRun")] if v is not None]
    if any(value != "All" for value in values):
        raise errors.invalid(options_kind, "", [not_supported("dryRun", values, ("All",))], "meta.k8s.io")
    return bool(values)
