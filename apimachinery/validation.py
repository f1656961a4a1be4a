"""Field validation in Kubernetes' own words (``k8s.io/apimachinery/pkg/util/validation`` and ``…/field``).

Users read these messages in ``kubectl`` output (``The Pod "x" is invalid: spec.containers[0].name: Required
value``), so every helper reproduces the exact wording, quoting and value rendering of the Go code:

* ``required / invalid / not_supported / duplicate / forbidden / too_long / too_many / not_found`` build one
  ``Cause`` each — the ``field.Error`` constructors; the cause message is Go's ``ErrorBody()``.
* ``is_*`` functions return a list of problem descriptions (empty when valid), like ``validation.IsDNS1123Label``.
* ``name_is_*`` are the per-resource ``ValidateNameFunc``s (``prefix`` = the value is a ``generateName``);
  ``validate_object_meta`` takes any ``name -> problems`` function (a strategy's ``name_validator``).
* ``validate_*`` functions walk a field and return causes.

Values are rendered as Go's ``%q`` / ``%v`` / ``%#v`` would (``go_value``); pass ``Raw("…")`` for a value
that is already rendered (a Go struct literal, say).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from apimachinery.errors import Cause

# A ValidateNameFunc: what is wrong with a name (empty when valid). ``generateName`` prefixes are checked
# with their trailing dash masked, as Go's ``prefix`` argument does.
NameFn = Callable[[str], list[str]]

# --- value rendering (field.Error.ErrorBody) ---------------------------------------------------------------


class Raw(str):
    """A value already rendered the way Go prints it (e.g. ``core.Taint{Key:"a", …}``)."""


def go_quote(value: str) -> str:
    """Go's ``%q`` (``strconv.Quote``): quotes and backslashes escaped, ``\\n``-style escapes for the C controls,
    ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN`` for other non-printable runes, printable Unicode as is."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif 0xD800 <= code < 0xE000:
            out.append("\ufffd")  # a lone surrogate: Go's JSON decoder reads it as the replacement rune
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_value(value: Any) -> str:
    """Render a bad value as ``ErrorBody`` does: ``%q`` for strings, ``%v`` for scalars, ``%#v`` for maps/slices."""
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Mapping):
        return go_string_map(value)
    if isinstance(value, (list, tuple)):
        return go_string_slice(value)
    return str(value)


def go_pointer(go_type: str, value: Any) -> str:
    """How ``%#v`` prints a pointer field: set (a stand-in address, never a real one) or nil."""
    return f"(*{go_type})({'0xc000000000' if value is not None else 'nil'})"


def go_string_map(value: Mapping[str, Any] | None) -> str:
    """``%#v`` of a ``map[string]string`` (Go prints map keys sorted)."""
    if value is None:
        return "map[string]string(nil)"
    items = ", ".join(f"{go_quote(k)}:{go_quote(str(value[k]))}" for k in sorted(value))
    return "map[string]string{" + items + "}"


def go_string_slice(value: Iterable[Any] | None) -> str:
    """``%#v`` of a ``[]string``."""
    if value is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(str(v)) for v in value) + "}"


# --- field errors (field.Required, field.Invalid, …) -------------------------------------------------------


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", _with_detail("Required value", detail), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueInvalid", _with_detail(f"Invalid value: {go_value(value)}", detail), path)


def not_supported(path: str, value: Any, valid: Iterable[str]) -> Cause:
    quoted = ", ".join(go_quote(v) for v in valid)
    detail = f"supported values: {quoted}" if quoted else ""
    return Cause("FieldValueNotSupported", _with_detail(f"Unsupported value: {go_value(value)}", detail), path)


def duplicate(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueDuplicate", _with_detail(f"Duplicate value: {go_value(value)}", detail), path)


def forbidden(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueForbidden", _with_detail("Forbidden", detail), path)


def not_found(path: str, value: Any, detail: str = "") -> Cause:
    return Cause("FieldValueNotFound", _with_detail(f"Not found: {go_value(value)}", detail), path)


def too_long(path: str, max_length: int) -> Cause:
    unit = "byte" if max_length == 1 else "bytes"
    detail = f"may not be more than {max_length} {unit}" if max_length >= 0 else "value is too long"
    return Cause("FieldValueTooLong", f"Too long: {detail}", path)


def too_many(path: str, actual: int, max_quantity: int) -> Cause:
    unit = "item" if max_quantity == 1 else "items"
    detail = f"must have at most {max_quantity} {unit}" if max_quantity >= 0 else "has too many items"
    prefix = f"Too many: {actual}" if actual >= 0 else "Too many"
    return Cause("FieldValueTooMany", f"{prefix}: {detail}", path)


def _with_detail(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


# --- message builders (validation.RegexError & co.) --------------------------------------------------------

IS_NEGATIVE_ERROR_MSG = "must be greater than or equal to 0"
FIELD_IMMUTABLE_ERROR_MSG = "field is immutable"
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Kubernetes' ``RegexError``, including its famous double space before ``or``."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


# --- names and keys (validation.IsDNS1123Label & co.) ------------------------------------------------------

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63

_DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                      "must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_ERR = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                      "alphabetic character, and end with an alphanumeric character")
_QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                       "alphanumeric character")
_LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_CONFIG_MAP_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_ENV_VAR_NAME_ERR = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
                     "'.', and must not start with a digit")

_dns1123_label = re.compile(f"^{DNS1123_LABEL_FMT}$")
_dns1123_subdomain = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_dns1035_label = re.compile(f"^{DNS1035_LABEL_FMT}$")
_qualified_name = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_label_value = re.compile(f"^{LABEL_VALUE_FMT}$")
_config_map_key = re.compile(f"^{CONFIG_MAP_KEY_FMT}$")
_env_var_name = re.compile(f"^{ENV_VAR_NAME_FMT}$")
_port_name_charset = re.compile("^[-a-z0-9]+$")
_port_name_one_letter = re.compile("[a-z]")
_percent = re.compile("^[0-9]+%$")


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _dns1123_label.match(value):
        if _dns1123_subdomain.match(value):
            errs.append("must not contain dots")  # a valid subdomain that is not a label: it has dots
        else:
            errs.append(regex_error(_DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def path_segment_problems(name: str) -> list[str]:
    """``path.IsValidPathSegmentName``: a name that is one URL path segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _dns1123_subdomain.match(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _dns1035_label.match(value):
        errs.append(regex_error(_DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """A label key, annotation key, finalizer or condition type: ``[prefix/]name``."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _qualified_name.match(name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _label_value.match(value):
        errs.append(regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _config_map_key.match(value):
        errs.append(regex_error(_CONFIG_MAP_KEY_ERR, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _has_chdir_prefix(value)


def is_env_var_name(value: str) -> list[str]:
    errs = []
    if not _env_var_name.match(value):
        errs.append(regex_error(_ENV_VAR_NAME_ERR, ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _has_chdir_prefix(value)


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME: at most 15 lowercase alphanumerics and hyphens, with a letter, no ``--``."""
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _port_name_charset.match(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _port_name_one_letter.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_percent(value: str) -> list[str]:
    return [] if _percent.match(value) else ["a valid percent string must be a numeric string followed by an "
                                              "ending '%' (e.g. '1%',  or '93%', regex used for validation is "
                                              "'[0-9]+%')"]


def is_valid_ip(path: str, value: str) -> list[Cause]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    return []


# --- ValidateNameFuncs -------------------------------------------------------------------------------------


def _mask_trailing_dash(name: str) -> str:
    """A ``generateName`` may end in ``-``: the random suffix follows it."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_namespace_name(name: str, prefix: bool = False) -> list[str]:
    return name_is_dns_label(name, prefix)


# --- generic field validators ------------------------------------------------------------------------------


def validate_nonnegative(value: int | None, path: str) -> list[Cause]:
    return [invalid(path, value, IS_NEGATIVE_ERROR_MSG)] if value is not None and value < 0 else []


def validate_not_decremented(new: int | None, old: int | None, path: str) -> list[Cause]:
    """``IsDecremented``: a counter the server only raises (``status.collisionCount``) may not go down or away."""
    if old is None or (new is not None and new >= old):
        return []
    return [invalid(path, new or 0, "cannot be decremented")]


def go_int_or_string(value: Any) -> str:
    """``%#v`` of an ``intstr.IntOrString``."""
    if isinstance(value, str):
        return f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}'
    return f'intstr.IntOrString{{Type:0, IntVal:{int(value or 0)}, StrVal:""}}'


def percent_value(value: Any) -> int | None:
    """The number of a ``"25%"`` IntOrString, ``None`` for an int or a malformed string (``getPercentValue``)."""
    if isinstance(value, str) and _percent.match(value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: Any) -> int:
    percent = percent_value(value)
    if percent is not None:
        return percent
    return value if isinstance(value, int) else 0


def validate_int_or_percent(value: Any, path: str) -> list[Cause]:
    """``ValidatePositiveIntOrPercent``: a non-negative int or a valid percent string."""
    if isinstance(value, str):
        return [invalid(path, Raw(go_int_or_string(value)), msg) for msg in is_valid_percent(value)]
    return validate_nonnegative(int(value or 0), path)


def validate_not_more_than_100_percent(value: Any, path: str) -> list[Cause]:
    """``IsNotMoreThan100Percent``."""
    percent = percent_value(value)
    if percent is None or percent <= 100:
        return []
    return [invalid(path, Raw(go_int_or_string(value)), "must not be greater than 100%")]


def validate_immutable(new: Any, old: Any, path: str, rendered: str | None = None) -> list[Cause]:
    """``ValidateImmutableField``; ``rendered`` is the Go rendering of ``new`` when it is a struct."""
    if new == old:
        return []
    return [invalid(path, Raw(rendered) if rendered is not None else new, FIELD_IMMUTABLE_ERROR_MSG)]


def validate_dns1123_label(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in is_dns1123_label(value)]


def validate_dns1123_subdomain(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def validate_qualified_name(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in is_qualified_name(value)]


def validate_label_name(key: str, path: str) -> list[Cause]:
    return validate_qualified_name(key, path)


def validate_labels(labels: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``ValidateLabels``: every key a qualified name, every value a label value (errors name the map's path)."""
    causes: list[Cause] = []
    for key, value in (labels or {}).items():
        causes.extend(validate_label_name(key, path))
        causes.extend(invalid(path, value, msg) for msg in is_valid_label_value(str(value)))
    return causes


def validate_annotations(annotations: Mapping[str, Any] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in (annotations or {}).items():
        causes.extend(invalid(path, key, msg) for msg in is_qualified_name(key.lower()))
        total += len(key) + len(str(value))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return causes


_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_finalizers(finalizers: list[str] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for finalizer in finalizers or []:
        causes.extend(invalid(path, finalizer, msg) for msg in is_qualified_name(finalizer))
    if finalizers and "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    for i, finalizer in enumerate(finalizers or []):
        causes.extend(validate_kube_finalizer_name(finalizer, f"{path}[{i}]"))
    return causes


def validate_kube_finalizer_name(finalizer: str, path: str) -> list[Cause]:
    """A qualified name; without a ``/`` prefix it must be one of Kubernetes' own finalizers."""
    causes = [invalid(path, finalizer, msg) for msg in is_qualified_name(finalizer)]
    if "/" not in finalizer and finalizer not in _STANDARD_FINALIZERS:
        causes.append(invalid(path, finalizer, "name is neither a standard finalizer name nor is it fully qualified"))
    return causes


def validate_owner_references(refs: list[dict[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs or []:
        api_version = ref.get("apiVersion", "")
        version = api_version.rpartition("/")[2]
        if not version:
            causes.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                causes.append(invalid(f"{path}.{key}", ref.get(key, ""), "must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            causes.append(invalid(path, Raw(_go_owner_ref(ref)), "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller"):
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                causes.append(invalid(path, Raw("[]v1.OwnerReference{...}"),
                                      'Only one reference can have Controller set to true. Found "true" in '
                                      f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return causes


def _go_owner_ref(ref: Mapping[str, Any]) -> str:
    fields = (("APIVersion", "apiVersion"), ("Kind", "kind"), ("Name", "name"), ("UID", "uid"))
    return "v1.OwnerReference{" + ", ".join(f"{go}:{go_quote(str(ref.get(key, '')))}" for go, key in fields) + "}"


def validate_object_meta(meta: Mapping[str, Any], namespaced: bool, name_fn: NameFn,
                         path: str = "metadata") -> list[Cause]:
    """``ValidateObjectMeta`` on create: name (or generateName), namespace, labels, annotations, owners."""
    causes: list[Cause] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        causes.extend(invalid(f"{path}.generateName", generate_name, msg)
                      for msg in name_fn(_mask_trailing_dash(generate_name)))
    name = meta.get("name") or ""
    if not name:
        causes.append(required(f"{path}.name", "name or generateName is required"))
    else:
        causes.extend(invalid(f"{path}.name", name, msg) for msg in name_fn(name))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required(f"{path}.namespace"))
        else:
            causes.extend(invalid(f"{path}.namespace", namespace, msg)
                          for msg in validate_namespace_name(namespace, False))
    elif namespace:
        causes.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    causes.extend(validate_nonnegative(meta.get("generation"), f"{path}.generation"))
    causes.extend(_validate_meta_common(meta, path))
    return causes


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any],
                                path: str = "metadata") -> list[Cause]:
    """``ValidateObjectMetaUpdate``: identity fields are immutable; labels and annotations stay valid."""
    causes: list[Cause] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            causes.append(forbidden(f"{path}.finalizers", "no new finalizers can be added if the object is being "
                                                          f"deleted, found new finalizers {go_string_slice(added)}"))
    if (new.get("generation") or 0) < (old.get("generation") or 0):
        causes.append(invalid(f"{path}.generation", new.get("generation") or 0, "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        causes.extend(validate_immutable(new.get(key) or "", old.get(key) or "", f"{path}.{key}"))
    for key in ("creationTimestamp", "deletionTimestamp"):
        if new.get(key) != old.get(key):
            causes.append(invalid(f"{path}.{key}", Raw(go_time(new.get(key))), FIELD_IMMUTABLE_ERROR_MSG))
    causes.extend(validate_immutable(new.get("deletionGracePeriodSeconds"), old.get("deletionGracePeriodSeconds"),
                                     f"{path}.deletionGracePeriodSeconds"))
    causes.extend(_validate_meta_common(new, path))
    return causes


def _validate_meta_common(meta: Mapping[str, Any], path: str) -> list[Cause]:
    causes = validate_labels(meta.get("labels"), f"{path}.labels")
    causes.extend(validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    causes.extend(validate_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences"))
    causes.extend(validate_finalizers(meta.get("finalizers"), f"{path}.finalizers"))
    return causes


def go_time(value: str | None) -> str:
    """How Go prints a ``metav1.Time`` in an error (``2024-01-02 03:04:05 +0000 UTC``; ``null`` when unset)."""
    if not value:
        return "null"
    return value.replace("T", " ").rstrip("Z").split(".")[0] + " +0000 UTC"


# --- label selectors (metav1 validation) -------------------------------------------------------------------

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``ValidateLabelSelector`` with invalid label values rejected (apps/v1's strict mode)."""
    if selector is None:
        return []
    causes = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        causes.extend(validate_label_selector_requirement(expr, f"{path}.matchExpressions[{i}]"))
    return causes


def validate_label_selector_requirement(expr: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    operator = expr.get("operator", "")
    values = expr.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(forbidden(f"{path}.values",
                                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    else:
        causes.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    causes.extend(validate_label_name(expr.get("key", ""), f"{path}.key"))
    for i, value in enumerate(values):
        causes.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in is_valid_label_value(str(value)))
    return causes
