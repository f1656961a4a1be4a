"""Kubernetes' CEL libraries, as extension functions of the ``cel`` evaluator.

The evaluator brings CEL's standard definitions and the ``strings``/``lists``/``math``/``sets`` extensions
(``cel.stdlib``); this module adds what Kubernetes declares on top (``k8s.io/apiserver/pkg/cel/library``):

* lists: ``isSorted()`` (``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf`` are the stdlib's);
* regex: ``find(re)``, ``findAll(re[, n])``; strings: ``format(args)`` (``%s %d %f %e %x %o %b %%``);
* ``quantity(s)`` / ``isQuantity(s)`` with ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``,
  ``add``, ``sub``, ``isGreaterThan``, ``isLessThan``, ``compareTo``;
* ``url(s)`` / ``isURL(s)`` with ``getScheme``, ``getHost``, ``getHostname``, ``getPort``, ``getEscapedPath``,
  ``getQuery``;
* ``ip(s)`` / ``isIP(s)`` / ``ip.isCanonical(s)`` and ``cidr(s)`` / ``isCIDR(s)`` with ``family``,
  ``isUnspecified``, ``isLoopback``, ``isLinkLocalMulticast``, ``isLinkLocalUnicast``, ``isGlobalUnicast``,
  ``containsIP``, ``containsCIDR``, ``prefixLength``, ``masked``, ``ip()``;
* optional selection and indexing (``a.?b``, ``a[?k]``, rewritten by ``render``); the optional type and its
  functions (``optional.of``, ``orValue``, ``hasValue``…) are the evaluator's;
* the ``authorizer`` variable's builder (``group``, ``resource``, ``subresource``, ``namespace``, ``name``,
  ``path``, ``serviceAccount``, ``check``, ``allowed``, ``reason``, ``errored``, ``error``) answered by the
  apiserver's authorizer (``--authorization-mode``) for the request's user, or the service account named.

The evaluator only passes CEL's own values to Python, so the opaque Kubernetes types (Quantity, URL, IP, CIDR,
the authorizer's builders) travel as maps tagged with ``TYPE_KEY``; member calls arrive with their receiver as
the first argument. Misuse raises ``LibraryError`` with cel-go's text.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from apimachinery.quantity import Quantity, parse_quantity

from ..authentication import ALL_AUTHENTICATED, SERVICE_ACCOUNT_PREFIX, UserInfo, service_account_groups
from ..authorizer import AUTHORIZER
from . import engine

if TYPE_CHECKING:
    import cel

TYPE_KEY = "__kubelab_type__"
Value = Any


class LibraryError(Exception):
    """A library function was called with values it does not take."""


def _tagged(kind: str, **fields: Any) -> dict[str, Any]:
    return {TYPE_KEY: kind, **fields}


def _kind(value: Value) -> str | None:
    return value.get(TYPE_KEY) if isinstance(value, dict) else None


def _expect(value: Value, kind: str, function: str) -> dict[str, Any]:
    if _kind(value) != kind:
        raise LibraryError(f"no such overload: {function}")
    return value  # type: ignore[no-any-return]


# --- lists and strings ------------------------------------------------------------------------------------------
def is_sorted(values: Value) -> bool:
    if not isinstance(values, list):
        raise LibraryError("no such overload: isSorted")
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group() if match else ""


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group() for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise LibraryError(f"error parsing regexp: {err}") from None


_VERB = re.compile(r"%(?:\.(\d+))?([sdfexXobq%])")


def format_string(template: str, args: Value) -> str:
    """``strings.format``: %s %d %f (%.Nf) %e %x %X %o %b %q and %%."""
    if not isinstance(args, list):
        raise LibraryError("no such overload: format")
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        precision, verb = match.group(1), match.group(2)
        if verb == "%":
            return "%"
        try:
            value = next(values)
        except StopIteration:
            raise LibraryError(f"index {len(args)} out of range") from None
        if verb == "s":
            return _to_string(value)
        if verb == "q":
            return '"' + _to_string(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
        if verb == "d":
            if isinstance(value, bool) or not isinstance(value, int):
                raise LibraryError("error during formatting: decimal clause can only be used on integers, was "
                                   f"given {_type_name(value)}")
            return str(value)
        if verb in "fe":
            digits = int(precision) if precision is not None else 6
            return f"{float(value):.{digits}{verb}}"
        number = int(value)
        return format(number, {"x": "x", "X": "X", "o": "o", "b": "b"}[verb])

    return _VERB.sub(one, template)


def _type_name(value: Value) -> str:
    return {bool: "bool", int: "int", float: "double", str: "string", list: "list", dict: "map",
            bytes: "bytes"}.get(type(value), "dyn")


def _to_string(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_to_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_to_string(k)}: {_to_string(v)}" for k, v in value.items()) + "}"
    return str(value)


# --- quantity ---------------------------------------------------------------------------------------------------
def _parse_quantity(text: Value) -> Quantity:
    if not isinstance(text, str):
        raise LibraryError("no such overload: quantity")
    try:
        return parse_quantity(text)
    except ValueError as err:
        raise LibraryError(str(err)) from None


def quantity(text: Value) -> dict[str, Any]:
    return _tagged("quantity", value=str(_parse_quantity(text)))


def is_quantity(text: Value) -> bool:
    try:
        _parse_quantity(text)
        return True
    except LibraryError:
        return False


def _q(value: Value, function: str) -> Quantity:
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity.from_int(value)
    return parse_quantity(_expect(value, "quantity", function)["value"])


def _quantity_function(function: str, op: Callable[[Quantity, Quantity], Value]) -> Callable[..., Value]:
    def call(receiver: Value, other: Value) -> Value:
        return op(_q(receiver, function), _q(other, function))
    return call


def _as_integer(value: Value) -> int:
    q = _q(value, "asInteger")
    if q.exact != int(q.exact) or not -(2 ** 63) <= q.exact < 2 ** 63:
        raise LibraryError("cannot convert value to integer")
    return int(q.exact)


# --- urls -------------------------------------------------------------------------------------------------------
def url(text: Value) -> dict[str, Any]:
    if not isinstance(text, str) or not _url_ok(text):
        raise LibraryError(f"URL parse error during conversion from string: parse \"{text}\": invalid URI for "
                           f"request")
    return _tagged("url", value=text)


def _url_ok(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return bool(parts.scheme and (parts.netloc or parts.path)) or text.startswith("/")


def is_url(text: Value) -> bool:
    return isinstance(text, str) and _url_ok(text)


def _url_part(part: str) -> Callable[[Value], str]:
    def get(value: Value) -> str:
        parts = urlsplit(str(_expect(value, "url", part)["value"]))
        if part == "getScheme":
            return parts.scheme
        if part == "getHost":
            return parts.netloc.rsplit("@", 1)[-1]
        if part == "getHostname":
            return parts.hostname or ""
        if part == "getPort":
            return str(parts.port) if parts.port is not None else ""
        if part == "getEscapedPath":
            return parts.path
        return parts.query
    return get


def get_query(value: Value) -> dict[str, list[str]]:
    from urllib.parse import parse_qs

    return parse_qs(urlsplit(_expect(value, "url", "getQuery")["value"]).query, keep_blank_values=True)


# --- ip and cidr ------------------------------------------------------------------------------------------------
def _parse_ip(text: Value) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if not isinstance(text, str) or "%" in text:
        raise LibraryError(f"IP Address {text!r} parse error during conversion from string: ParseAddr({text!r}): "
                           f"unable to parse IP")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise LibraryError(f'IP Address "{text}" parse error during conversion from string: ParseAddr("{text}"): '
                           f"unable to parse IP") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise LibraryError("IPv4-mapped IPv6 address is not allowed")
    return address


def ip(value: Value) -> dict[str, Any]:
    if _kind(value) == "cidr":
        return _tagged("ip", value=str(ipaddress.ip_interface(value["value"]).ip))
    return _tagged("ip", value=str(_parse_ip(value)))


def is_ip(value: Value) -> bool:
    try:
        _parse_ip(value)
        return True
    except LibraryError:
        return False


def ip_is_canonical(value: Value) -> bool:
    canonical: bool = str(_parse_ip(value)) == value
    return canonical


def _parse_cidr(text: Value) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    if not isinstance(text, str) or "/" not in text:
        raise LibraryError(f'network address parse error during conversion from string: netip.ParsePrefix("{text}"):'
                           f" no '/'")
    try:
        return ipaddress.ip_interface(text)
    except ValueError as err:
        raise LibraryError(f"network address parse error during conversion from string: {err}") from None


def cidr(value: Value) -> dict[str, Any]:
    return _tagged("cidr", value=str(_parse_cidr(value)))


def is_cidr(value: Value) -> bool:
    try:
        _parse_cidr(value)
        return True
    except LibraryError:
        return False


def _address(value: Value, function: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(_expect(value, "ip", function)["value"])


def _ip_predicate(function: str, test: Callable[[Any], bool]) -> Callable[[Value], bool]:
    def call(value: Value) -> bool:
        return test(_address(value, function))
    return call


def family(value: Value) -> int:
    if _kind(value) == "cidr":
        return ipaddress.ip_interface(value["value"]).version
    return _address(value, "family").version


def contains_ip(value: Value, other: Value) -> bool:
    network = ipaddress.ip_interface(_expect(value, "cidr", "containsIP")["value"]).network
    address = _address(other, "containsIP") if _kind(other) == "ip" else _parse_ip(other)
    return address in network


def contains_cidr(value: Value, other: Value) -> bool:
    network = ipaddress.ip_interface(_expect(value, "cidr", "containsCIDR")["value"]).network
    inner = ipaddress.ip_interface(other["value"] if _kind(other) == "cidr" else _parse_cidr(other).with_prefixlen)
    return inner.network.version == network.version and inner.network.subnet_of(network)  # type: ignore[arg-type]


def prefix_length(value: Value) -> int:
    return ipaddress.ip_interface(_expect(value, "cidr", "prefixLength")["value"]).network.prefixlen


def masked(value: Value) -> dict[str, Any]:
    return _tagged("cidr", value=str(ipaddress.ip_interface(_expect(value, "cidr", "masked")["value"]).network))


# --- authorizer ---------------------------------------------------------------------------------------------------
def authorizer(user: UserInfo | None = None) -> dict[str, Any]:
    """The ``authorizer`` variable for the request's ``user`` (its name and groups travel in the tagged map)."""
    user = user or UserInfo("")
    return _tagged("authorizer", username=user.username, groups=list(user.groups))


def _builder(step: str) -> Callable[..., dict[str, Any]]:
    def call(receiver: Value, *args: Value) -> dict[str, Any]:
        kind = _kind(receiver)
        if kind not in ("authorizer", "pathcheck", "groupcheck", "resourcecheck"):
            raise LibraryError(f"no such overload: {step}")
        next_kind = {"path": "pathcheck", "group": "groupcheck", "serviceAccount": "authorizer"}.get(step,
                                                                                                     "resourcecheck")
        return _tagged(next_kind, **{k: v for k, v in receiver.items() if k != TYPE_KEY}, **{step: list(args)})
    return call


def check(receiver: Value, verb: Value) -> dict[str, Any]:
    """Ask the apiserver's authorizer about the request the builder describes."""
    if _kind(receiver) not in ("pathcheck", "resourcecheck", "groupcheck"):
        raise LibraryError("no such overload: check")
    user = UserInfo(receiver.get("username") or "", tuple(receiver.get("groups") or ()))
    if receiver.get("serviceAccount"):
        namespace, name = (list(receiver["serviceAccount"]) + ["", ""])[:2]
        username = f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
        user = UserInfo(username, (*service_account_groups(username), ALL_AUTHENTICATED))

    def first(step: str) -> str:
        return str((receiver.get(step) or [""])[0])

    attributes = {"verb": verb, "path": first("path")} if "path" in receiver else {
        "verb": verb, **{step: first(step) for step in ("group", "resource", "subresource", "namespace", "name")}}
    decision = AUTHORIZER.authorize(user, attributes)
    return _tagged("decision", allowed=decision.allowed, reason=decision.reason, verb=verb)


def _decision(field: str) -> Callable[[Value], Value]:
    def call(receiver: Value) -> Value:
        decision = _expect(receiver, "decision", field)
        return {"allowed": decision["allowed"], "reason": decision["reason"], "errored": False, "error": ""}[field]
    return call


# --- optional values: the evaluator has the type and its methods, not the syntax (``render`` rewrites it) -------
def _unwrap(value: Value) -> tuple[bool, Value]:
    """(present, value) of an optional, or of a plain value (present)."""
    if isinstance(value, engine.module().OptionalValue):
        return (True, value.value()) if value.has_value() else (False, None)
    return True, value


def _optional(present: bool, value: Value = None) -> cel.OptionalValue:
    """``optional.of(value)`` or ``optional.none()`` (the evaluator's module is loaded lazily, hence untyped)."""
    optional = engine.module().OptionalValue
    made: cel.OptionalValue = optional.of(value) if present else optional.none()
    return made


def opt_select(target: Value, field: str) -> cel.OptionalValue:
    """``target.?field``: the field when present, else ``optional.none()``."""
    present, value = _unwrap(target)
    if present and isinstance(value, dict) and field in value:
        return _optional(True, value[field])
    return _optional(False)


def opt_index(target: Value, key: Value) -> cel.OptionalValue:
    """``target[?key]``: the entry (map key or list index) when present, else ``optional.none()``."""
    present, value = _unwrap(target)
    if present and isinstance(value, dict) and key in value:
        return _optional(True, value[key])
    if present and isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
        return _optional(True, value[key])
    return _optional(False)


def functions() -> dict[str, Callable[..., Value]]:
    """Every extension function, by the name CEL calls it."""
    return {
        "isSorted": is_sorted, "find": find, "findAll": find_all, "format": format_string,
        "quantity": quantity, "isQuantity": is_quantity,
        "sign": lambda v: _q(v, "sign").sign, "isInteger": lambda v: _is_integer(v),
        "asInteger": _as_integer, "asApproximateFloat": lambda v: float(_q(v, "asApproximateFloat").exact),
        "add": _quantity_function("add", lambda a, b: _tagged("quantity", value=str(a + b))),
        "sub": _quantity_function("sub", lambda a, b: _tagged("quantity", value=str(a - b))),
        "isGreaterThan": _quantity_function("isGreaterThan", lambda a, b: a > b),
        "isLessThan": _quantity_function("isLessThan", lambda a, b: a < b),
        "compareTo": _quantity_function("compareTo", lambda a, b: (a > b) - (a < b)),
        "url": url, "isURL": is_url, "getScheme": _url_part("getScheme"), "getHost": _url_part("getHost"),
        "getHostname": _url_part("getHostname"), "getPort": _url_part("getPort"),
        "getEscapedPath": _url_part("getEscapedPath"), "getQuery": get_query,
        "ip": ip, "isIP": is_ip, "ip.isCanonical": ip_is_canonical, "cidr": cidr, "isCIDR": is_cidr,
        "family": family, "isUnspecified": _ip_predicate("isUnspecified", lambda a: a.is_unspecified),
        "isLoopback": _ip_predicate("isLoopback", lambda a: a.is_loopback),
        "isLinkLocalMulticast": _ip_predicate("isLinkLocalMulticast",
                                              lambda a: a.is_multicast and a.is_link_local or
                                              (a.version == 4 and a in ipaddress.ip_network("224.0.0.0/24"))),
        "isLinkLocalUnicast": _ip_predicate("isLinkLocalUnicast", lambda a: a.is_link_local and not a.is_multicast),
        "isGlobalUnicast": _ip_predicate("isGlobalUnicast", lambda a: not (
            a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local or
            (a.version == 4 and a == ipaddress.ip_address("255.255.255.255")))),
        "containsIP": contains_ip, "containsCIDR": contains_cidr, "prefixLength": prefix_length, "masked": masked,
        "path": _builder("path"), "group": _builder("group"), "resource": _builder("resource"),
        "subresource": _builder("subresource"), "namespace": _builder("namespace"), "name": _builder("name"),
        "serviceAccount": _builder("serviceAccount"), "check": check, "allowed": _decision("allowed"),
        "reason": _decision("reason"), "errored": _decision("errored"), "error": _decision("error"),
        "__kubelab_opt_select": opt_select, "__kubelab_opt_index": opt_index,
    }


def _is_integer(value: Value) -> bool:
    q = _q(value, "isInteger")
    return q.exact == int(q.exact) and -(2 ** 63) <= q.exact < 2 ** 63
