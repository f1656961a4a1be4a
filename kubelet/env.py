"""A container's environment as the kubelet builds it (``makeEnvironmentVariables``), plus ``$(VAR)`` expansion.

Pure functions: the pod worker fetches the ConfigMaps and Secrets a container refers to
(``sources.env_references``) and passes them in, so this module never does I/O. The rules follow Kubernetes:

* ``envFrom`` first, then ``env`` in order; a later entry overrides an earlier one of the same name;
* an ``env[].value`` is expanded with ``$(NAME)`` against the variables defined *before* it (``$$`` escapes
  ``$``; an undefined reference stays as written); ``valueFrom`` values are never expanded;
* ``command`` and ``args`` are expanded against the pod-defined variables only (not the runtime's ``PATH`` or
  ``HOSTNAME``), as ``ExpandContainerCommandAndArgs`` does;
* the runtime adds what a container runtime gives every container: ``PATH``, ``HOSTNAME`` (the pod's
  ``spec.hostname``, a StatefulSet pod's stable name, else the pod name: ``GeneratePodHostNameAndDomain``) and
  ``HOME``; the pod's own variables override them.

A missing non-optional ConfigMap, Secret or key raises ``EnvError``: the kubelet reports
``CreateContainerConfigError`` and tries again. Both kinds follow one set of rules (``sources``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from apimachinery.quantity import parse_quantity

from .sources import SOURCE_KINDS, SourceKind, Sources

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class EnvError(Exception):
    """The container's environment cannot be built (missing ConfigMap or key, bad field path)."""


# --- $(VAR) expansion (third_party/forked/golang/expansion) ----------------------------------------------------


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """Replace ``$(NAME)`` with ``mapping(NAME)``; ``$$`` is a literal ``$``; anything else stays as written."""
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_variable(text[cursor + 1:])
            out.append(mapping(read) if is_var else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _read_variable(rest: str) -> tuple[str, bool, int]:
    if rest[0] == "$":
        return "$", False, 1
    if rest[0] == "(":
        end = rest.find(")", 1)
        if end > 0:
            return rest[1:end], True, end + 1
        return "$(", False, 1
    return "$" + rest[0], False, 1


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """``MappingFuncFor``: the first context that defines a name wins; an undefined name stays ``$(NAME)``."""
    def lookup(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"$({name})"
    return lookup


def expand_command(container: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``container`` with ``command`` and ``args`` expanded against ``env``."""
    lookup = mapping_for(env)
    expanded = dict(container)
    for key in ("command", "args"):
        if container.get(key):
            expanded[key] = [expand(str(part), lookup) for part in container[key]]
    return expanded


# --- the downward API ------------------------------------------------------------------------------------------


def field_value(pod: Mapping[str, Any], path: str, pod_ip: str, host_ip: str) -> str:
    """``podFieldSelectorRuntimeValue`` + ``ExtractFieldPathAsString`` for an env ``fieldRef``."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    match = _SUBSCRIPT.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"), "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"), "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": pod_ip, "status.podIPs": pod_ip, "status.hostIP": host_ip, "status.hostIPs": host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{_escape(str(values[k]))}"' for k in sorted(values))
    raise EnvError(f'unsupported fieldPath: "{path}"')


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def resource_value(pod: Mapping[str, Any], container: Mapping[str, Any], ref: Mapping[str, Any],
                   allocatable: Mapping[str, str]) -> str:
    """A ``resourceFieldRef`` value: the limit (node allocatable when unset) or request, divided and rounded up."""
    name = ref.get("containerName") or container.get("name")
    target = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), container)
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    if kind not in ("limits", "requests") or not resource:
        raise EnvError(f'unsupported container resource: "{ref.get("resource")}"')
    resources = target.get("resources") or {}
    amount = (resources.get(kind) or {}).get(resource)
    if amount is None and kind == "limits":
        amount = allocatable.get(resource)
    quantity = parse_quantity(amount if amount is not None else 0)
    divisor = parse_quantity(ref.get("divisor") or "1")
    if divisor.is_zero():
        raise EnvError("resourceFieldRef divisor must not be zero")
    if resource == "cpu":
        return str(math.ceil(quantity.milli_value() / divisor.milli_value()))
    return str(math.ceil(quantity.value() / divisor.value()))


# --- the whole environment --------------------------------------------------------------------------------------


def pod_env(pod: Mapping[str, Any], container: Mapping[str, Any], *, pod_ip: str, host_ip: str,
            sources: Sources, allocatable: Mapping[str, str]) -> dict[str, str]:
    """The variables the pod spec defines for ``container`` (``envFrom`` then ``env``), in order.

    ``sources`` holds the ConfigMaps and Secrets the container refers to (``sources.env_references``).
    """
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        for kind in SOURCE_KINDS:
            ref = source.get(kind.env_ref)
            if ref:
                obj = _lookup(kind, ref, sources)
                if obj is not None:
                    env.update((source.get("prefix", "") + key, value) for key, value in kind.env_values(obj).items())
    for var in container.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var or var.get("valueFrom") is None:
            env[name] = expand(str(var.get("value") or ""), mapping_for(env))
            continue
        value_from = var["valueFrom"]
        if value_from.get("fieldRef"):
            env[name] = field_value(pod, value_from["fieldRef"].get("fieldPath", ""), pod_ip, host_ip)
        elif value_from.get("resourceFieldRef"):
            env[name] = resource_value(pod, container, value_from["resourceFieldRef"], allocatable)
        else:
            for kind in SOURCE_KINDS:
                if value_from.get(kind.key_ref):
                    value = _key_value(kind, value_from[kind.key_ref], sources, pod)
                    if value is not None:
                        env[name] = value
    return env


def _lookup(kind: SourceKind, ref: Mapping[str, Any], sources: Sources) -> Mapping[str, Any] | None:
    """The object ``ref`` names; None when it is missing and ``optional`` (``EnvError`` when not optional)."""
    obj = sources.get((kind, ref.get("name", "")))
    if obj is None and not ref.get("optional"):
        raise EnvError(kind.not_found(ref.get("name", "")))
    return obj


def _key_value(kind: SourceKind, ref: Mapping[str, Any], sources: Sources, pod: Mapping[str, Any]) -> str | None:
    """A ``configMapKeyRef``/``secretKeyRef`` value; None when object or key is missing and ``optional``."""
    obj = _lookup(kind, ref, sources)
    if obj is None:
        return None
    key, values = ref.get("key", ""), kind.env_values(obj)
    if key not in values:
        if ref.get("optional"):
            return None
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        raise EnvError(f"couldn't find key {key} in {kind.resource.kind} {namespace}/{ref.get('name', '')}")
    return values[key]


def runtime_env(pod: Mapping[str, Any], defined: Mapping[str, str]) -> dict[str, str]:
    """What the process sees: the runtime's ``PATH``/``HOSTNAME``/``HOME``, overridden by the pod's variables."""
    hostname = (pod.get("spec") or {}).get("hostname") or (pod.get("metadata") or {}).get("name", "")
    env = {"PATH": os.environ.get("PATH") or DEFAULT_PATH, "HOSTNAME": hostname, "HOME": "/root"}
    env.update(defined)
    return env
