"""ConfigMaps and Secrets as a pod consumes them: one set of rules, two kinds of object.

A container reads either kind the same three ways — one key into a variable (``configMapKeyRef`` /
``secretKeyRef``), every key into variables (``envFrom[].configMapRef`` / ``secretRef``), every key (or chosen
``items``) as files of a volume (``volumes[].configMap`` / ``secret``) — with the same ``optional`` rule and the
same errors, in the words of each kind's manager (``configmap "x" not found`` / ``secret "x" not found``). What
differs is in ``SourceKind``: field names, messages, and how values are stored (a ConfigMap's ``data`` is text and
its ``binaryData`` base64; a Secret's ``data`` is base64 and is decoded before a container sees it).

``env`` and ``volumes`` apply the rules; the pod worker fetches the objects (``Sources``) before calling them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeclient.resources import CONFIG_MAPS, SECRETS, Resource

Object = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SourceKind:
    """How one kind of object is referred to, named in errors, and turned into variables and files."""

    resource: Resource
    manager: str  # the kubelet's object manager names its kind so: ``configmap "x" not found``
    key_ref: str  # env[].valueFrom.<key_ref>
    env_ref: str  # envFrom[].<env_ref>
    volume: str  # volumes[].<volume>
    volume_name: str  # the field of the volume source that names the object
    plugin_dir: str  # <pod>/volumes/<plugin_dir>/<volume name>
    missing_file_key: str  # FailedMount message for an ``items`` key the object lacks; {key} is the key
    env_values: Callable[[Object], dict[str, str]]
    file_values: Callable[[Object], dict[str, bytes]]

    def not_found(self, name: str) -> str:
        return f'{self.manager} "{name}" not found'


def _config_map_env(obj: Object) -> dict[str, str]:
    return {key: str(value) for key, value in (obj.get("data") or {}).items()}


def _config_map_files(obj: Object) -> dict[str, bytes]:
    files = {key: str(value).encode() for key, value in (obj.get("data") or {}).items()}
    files.update((key, base64.b64decode(value)) for key, value in (obj.get("binaryData") or {}).items())
    return files


def _secret_files(obj: Object) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()}


def _secret_env(obj: Object) -> dict[str, str]:
    # Go's string([]byte): any bytes; surrogateescape keeps them when the runtime encodes the environment.
    return {key: value.decode("utf-8", "surrogateescape") for key, value in _secret_files(obj).items()}


CONFIG_MAP = SourceKind(CONFIG_MAPS, "configmap", "configMapKeyRef", "configMapRef", "configMap", "name",
                        "kubernetes.io~configmap", "configmap references non-existent config key: {key}",
                        _config_map_env, _config_map_files)
SECRET = SourceKind(SECRETS, "secret", "secretKeyRef", "secretRef", "secret", "secretName",
                    "kubernetes.io~secret", "references non-existent secret key: {key}", _secret_env, _secret_files)
SOURCE_KINDS = (CONFIG_MAP, SECRET)

# (kind, name) → the object from the pod's namespace, or None when it does not exist.
Sources = Mapping[tuple[SourceKind, str], Object | None]


def env_references(container: Mapping[str, Any]) -> set[tuple[SourceKind, str]]:
    """The objects a container's ``env``/``envFrom`` read (so the caller can fetch them first)."""
    refs: set[tuple[SourceKind, str]] = set()
    for kind in SOURCE_KINDS:
        names = [((var.get("valueFrom") or {}).get(kind.key_ref) or {}).get("name")
                 for var in container.get("env") or []]
        names += [(source.get(kind.env_ref) or {}).get("name") for source in container.get("envFrom") or []]
        refs.update((kind, name) for name in names if name)
    return refs


def volume_references(volumes: Iterable[Mapping[str, Any]]) -> set[tuple[SourceKind, str]]:
    """The objects a pod's ``configMap``/``secret`` volumes read."""
    refs: set[tuple[SourceKind, str]] = set()
    for volume in volumes:
        kind = volume_kind(volume)
        if kind is not None:
            refs.add((kind, volume[kind.volume].get(kind.volume_name, "")))
    return refs


def volume_kind(volume: Mapping[str, Any]) -> SourceKind | None:
    """The kind a volume projects, or None for any other volume."""
    return next((kind for kind in SOURCE_KINDS if volume.get(kind.volume) is not None), None)
