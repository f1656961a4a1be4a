"""Validation of the volume sources that project files — secret, configMap, downwardAPI, projected — as kube's
``validateSecretVolumeSource``, ``validateConfigMapVolumeSource``, ``validateDownwardAPIVolumeSource`` and
``validateProjectedVolumeSource`` do: file modes within 0..0777, each item's key and a relative path that never
climbs out of the volume, and a service-account token's lifetime between ten minutes and 2^32 seconds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid, required

FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
MIN_TOKEN_SECONDS = 10 * 60
MAX_TOKEN_SECONDS = 1 << 32


def validate_projecting_source(source: str, body: Mapping[str, Any], path: str) -> list[Cause]:
    """The checks for one volume's ``source`` (``path`` names the source, ``spec.volumes[0].secret``)."""
    if source not in ("secret", "configMap", "downwardAPI", "projected"):
        return []
    causes = _file_mode(body.get("defaultMode"), f"{path}.defaultMode")
    if source == "projected":
        for i, projection in enumerate(body.get("sources") or []):
            causes.extend(_projection(projection, f"{path}.sources[{i}]"))
    else:
        causes.extend(_items(body.get("items"), f"{path}.items", keyed=source != "downwardAPI"))
    return causes


def _projection(projection: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for kind in ("secret", "configMap", "downwardAPI"):
        if projection.get(kind) is not None:
            causes.extend(_items(projection[kind].get("items"), f"{path}.{kind}.items", keyed=kind != "downwardAPI"))
    token = projection.get("serviceAccountToken")
    if token is not None:
        seconds = token.get("expirationSeconds")
        if seconds is not None and seconds < MIN_TOKEN_SECONDS:
            causes.append(invalid(f"{path}.serviceAccountToken.expirationSeconds", seconds,
                                  "may not specify a duration less than 10 minutes"))
        if seconds is not None and seconds > MAX_TOKEN_SECONDS:
            causes.append(invalid(f"{path}.serviceAccountToken.expirationSeconds", seconds,
                                  "may not specify a duration larger than 2^32 seconds"))
        if not token.get("path"):
            causes.append(required(f"{path}.serviceAccountToken.path"))
    return causes


def _items(items: list[Mapping[str, Any]] | None, path: str, *, keyed: bool) -> list[Cause]:
    """``validateKeyToPath`` (``keyed``) / ``validateDownwardAPIVolumeFile``'s path and mode."""
    causes: list[Cause] = []
    for i, item in enumerate(items or []):
        where = f"{path}[{i}]"
        if keyed and not item.get("key"):
            causes.append(required(f"{where}.key"))
        target = item.get("path") or ""
        if not target:
            causes.append(required(f"{where}.path"))
        causes.extend(validate_local_non_reserved_path(target, f"{where}.path"))
        causes.extend(_file_mode(item.get("mode"), f"{where}.mode"))
    return causes


def _file_mode(mode: int | None, path: str) -> list[Cause]:
    return [invalid(path, mode, FILE_MODE_ERROR)] if mode is not None and not 0 <= mode <= 0o777 else []


def validate_local_descending_path(target: str, path: str) -> list[Cause]:
    """``validateLocalDescendingPath``: relative, and no ``..`` element."""
    if not target:
        return []
    causes = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    return causes + validate_no_backsteps(target, path)


def validate_local_non_reserved_path(target: str, path: str) -> list[Cause]:
    """``ValidateLocalNonReservedPath``: a descending path that does not start with ``..`` either."""
    causes = validate_local_descending_path(target, path)
    if target.startswith(".."):
        causes.append(invalid(path, target, "must not start with '..'"))
    return causes


def validate_no_backsteps(target: str, path: str) -> list[Cause]:
    """``validatePathNoBacksteps``: one error however many ``..`` elements."""
    return [invalid(path, target, "must not contain '..'")] if ".." in target.replace("\\", "/").split("/") else []
