"""What ``projected`` and ``downwardAPI`` volumes hold (``pkg/volume/projected``, ``pkg/volume/downwardapi``).

Pure functions from the pod and what the pod worker fetched first (ConfigMaps and Secrets in ``Sources``, tokens
from the ``TokenManager``) to a payload, path → (bytes, mode), that ``atomicwriter`` puts in place. A projected
volume merges its sources in order:

* ``serviceAccountToken``: a token of the pod's service account bound to the pod, for ``audience`` (default: the
  apiserver's), lasting ``expirationSeconds`` (default 3600);
* ``configMap`` / ``secret``: every key, or the ``items`` chosen, as for the volumes of those kinds (``optional``
  the same way; note a Secret projection names its object in ``name``, not ``secretName``);
* ``downwardAPI``: ``fieldRef`` (metadata, labels and annotations as ``key="value"`` lines) and
  ``resourceFieldRef`` values, as the downward API environment variables get them.

Each file's mode is its item's ``mode``, else the volume's ``defaultMode`` (0644).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .env import EnvError, field_value, resource_value
from .sources import CONFIG_MAP, SECRET, SourceKind, Sources
from .token import TokenKey

DEFAULT_MODE = 0o644  # ProjectedVolumeSourceDefaultMode, DownwardAPIVolumeSourceDefaultMode
DEFAULT_TOKEN_EXPIRATION = 3600
PROJECTION_KINDS = ((CONFIG_MAP, "configMap"), (SECRET, "secret"))

Payload = dict[str, tuple[bytes, int]]
Tokens = Mapping[TokenKey, str]


class ProjectionError(Exception):
    """A source cannot be projected (a missing object or key); the mount fails and is retried."""


def projections(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every source of every projected volume of the pod."""
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        yield from (volume.get("projected") or {}).get("sources") or []


def projected_references(pod: Mapping[str, Any]) -> set[tuple[SourceKind, str]]:
    """The ConfigMaps and Secrets the pod's projected volumes read."""
    return {(kind, source[field].get("name", "")) for source in projections(pod)
            for kind, field in PROJECTION_KINDS if source.get(field) is not None}


def token_key(pod: Mapping[str, Any], projection: Mapping[str, Any]) -> TokenKey:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    audience = projection.get("audience") or ""
    return TokenKey(meta["namespace"], spec.get("serviceAccountName") or "default", (audience,) if audience else (),
                    int(projection.get("expirationSeconds") or DEFAULT_TOKEN_EXPIRATION), meta["name"], meta["uid"])


def token_keys(pod: Mapping[str, Any]) -> list[tuple[str, TokenKey]]:
    """The tokens the pod's projected volumes need, with the name of the volume that needs each."""
    return [(volume["name"], token_key(pod, source["serviceAccountToken"]))
            for volume in (pod.get("spec") or {}).get("volumes") or []
            for source in (volume.get("projected") or {}).get("sources") or []
            if source.get("serviceAccountToken") is not None]


def _object_files(kind: SourceKind, source: Mapping[str, Any], sources: Sources, default_mode: int) -> Payload:
    name = source.get("name", "")
    obj = sources.get((kind, name))
    if obj is None:
        if source.get("optional"):
            return {}
        raise ProjectionError(kind.not_found(name))
    files = kind.file_values(obj)
    payload: Payload = {}
    for item in source.get("items") or [{"key": key, "path": key} for key in files]:
        if item["key"] not in files:
            if source.get("optional"):
                continue
            raise ProjectionError(kind.missing_file_key.format(key=item["key"]))
        payload[item["path"]] = (files[item["key"]], item.get("mode", default_mode))
    return payload


def downward_files(pod: Mapping[str, Any], items: list[Mapping[str, Any]], default_mode: int, *, pod_ip: str,
                   host_ip: str, allocatable: Mapping[str, str]) -> Payload:
    """A ``downwardAPI`` volume's (or projection's) files."""
    payload: Payload = {}
    for item in items:
        try:
            if item.get("fieldRef"):
                value = field_value(pod, item["fieldRef"].get("fieldPath", ""), pod_ip, host_ip)
            else:
                ref = item.get("resourceFieldRef") or {}
                value = resource_value(pod, {"name": ref.get("containerName", "")}, ref, allocatable)
        except EnvError as err:
            raise ProjectionError(str(err)) from None
        payload[item["path"]] = (value.encode(), item.get("mode", default_mode))
    return payload


def projected_files(pod: Mapping[str, Any], volume: Mapping[str, Any], sources: Sources, tokens: Tokens, *,
                    pod_ip: str, host_ip: str, allocatable: Mapping[str, str]) -> Payload:
    """A projected volume's files, its sources merged in order."""
    mode = volume.get("defaultMode", DEFAULT_MODE)
    payload: Payload = {}
    for source in volume.get("sources") or []:
        if source.get("serviceAccountToken") is not None:
            projection = source["serviceAccountToken"]
            token = tokens.get(token_key(pod, projection))
            if token is None:
                raise ProjectionError("no token for the service account")
            payload[projection.get("path") or "token"] = (token.encode(), mode)
        elif source.get("downwardAPI") is not None:
            payload.update(downward_files(pod, source["downwardAPI"].get("items") or [], mode, pod_ip=pod_ip,
                                          host_ip=host_ip, allocatable=allocatable))
        for kind, field in PROJECTION_KINDS:
            if source.get(field) is not None:
                payload.update(_object_files(kind, source[field], sources, mode))
    return payload
