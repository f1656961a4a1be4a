"""``metadata.managedFields`` entries and field manager names (k8s.io/apiserver's ``managedfields`` and the
handlers' ``managerOrUserAgent``).

Entries are keyed as kube keys them (``BuildManagerIdentifier``): manager, operation, subresource and — for
``Update`` only — apiVersion, so an applier keeps one entry across versions while updaters get one per version.
They are encoded in kube's order (``Apply`` before ``Update``, then by time, manager, apiVersion, subresource)
with kube's field order, so two writes of the same ownership give the same bytes and a no-op stays a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from apimachinery import errors
from apimachinery.validation import forbidden, invalid, required, too_long

from .fieldpath import FieldSet, union

FIELD_MANAGER_MAX_LENGTH = 128
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
Operation = Literal["Apply", "Update"]
ManagerKey = tuple[str, str, str, str]  # manager, operation, apiVersion ("" for Apply), subresource


class Writer(NamedTuple):
    """Who makes a write: the field manager and the subresource it writes through (``scale`` for the parent)."""

    manager: str
    subresource: str = ""


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    fields: FieldSet
    subresource: str = ""

    @property
    def key(self) -> ManagerKey:
        return (self.manager, self.operation, "" if self.operation == "Apply" else self.api_version,
                self.subresource)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def describe(self) -> str:
        """The manager as conflicts name it (``printManager``; the key holds no time, so none is shown)."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


Managed = dict[ManagerKey, Entry]


def decode(entries: Any) -> Managed | None:
    """The entries of ``metadata.managedFields``; None when they cannot be decoded (kube then falls back to the
    live object's). Entries with no fields are dropped, which is how ``[{}]`` clears them."""
    if not isinstance(entries, list):
        return None
    managed: Managed = {}
    for raw in entries:
        if not isinstance(raw, dict):
            return None
        fields = raw.get("fieldsV1")
        if fields is not None and not isinstance(fields, dict):
            return None
        if raw.get("operation", "Update") not in ("Apply", "Update") or \
                raw.get("fieldsType", "FieldsV1") != "FieldsV1":
            return None
        if not fields:
            continue
        entry = Entry(str(raw.get("manager") or ""), raw["operation"], str(raw.get("apiVersion") or ""),
                      raw.get("time"), fields, str(raw.get("subresource") or ""))
        managed[entry.key] = entry
    return managed


def cap_updaters(managed: Managed, limit: int = MAX_UPDATE_MANAGERS) -> None:
    """At most ``limit`` Update entries (kube's capManagersManager): the oldest are merged, in place, into one
    ``ancient-changes`` entry per apiVersion, which takes the time of the newest update merged into it."""
    updaters = sorted((e for e in managed.values() if e.operation == "Update"), key=lambda e: (e.time or "", e.key))
    excess = len(updaters) - limit
    buckets: dict[str, Entry] = {}
    for entry in updaters:
        if excess <= 0:
            break
        bucket = buckets.get(entry.api_version)
        if bucket is None:
            buckets[entry.api_version] = entry  # the first of a version becomes the bucket when another joins it
            continue
        if bucket.manager != ANCIENT_CHANGES:
            del managed[bucket.key]
            bucket = buckets[entry.api_version] = Entry(ANCIENT_CHANGES, "Update", entry.api_version, None,
                                                        bucket.fields)
        del managed[entry.key]
        bucket.fields = union(bucket.fields, entry.fields)
        bucket.time = entry.time
        managed[bucket.key] = bucket
        excess -= 1


def _order(entry: Entry) -> tuple[str, str, str, str, str]:
    return entry.operation, entry.time or "", entry.manager, entry.api_version, entry.subresource


def encode(managed: Managed) -> list[dict[str, Any]]:
    return [entry.to_dict() for entry in sorted(managed.values(), key=_order)]


# --- manager names ----------------------------------------------------------------------------------------------
def prefix_from_user_agent(user_agent: str) -> str:
    """The manager of a request without ``fieldManager``: the User-Agent up to its first ``/``, printable
    characters only, at most 128 bytes (``kubectl/v1.32.0 …`` → ``kubectl``)."""
    out: list[str] = []
    size = 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        size += len(char.encode())
        if size > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(char)
    return "".join(out)


def manager_of(params: Any, user_agent: str | None, options_kind: str, apply: bool = False) -> str:
    """The field manager a write is recorded under; a bad ``fieldManager`` (or none for apply) is 422 Invalid
    ``<options_kind>.meta.k8s.io``, as kube validates Create/Update/PatchOptions."""
    manager = params.get("fieldManager") or ""
    causes = []
    if apply and not manager:
        causes.append(required("fieldManager", "is required for apply patch"))
    if not apply and params.get("force") is not None and options_kind == "PatchOptions":
        causes.append(forbidden("force", "may not be specified for non-apply patch"))
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    for i, char in enumerate(manager):
        if not char.isprintable():
            causes.append(invalid("fieldManager", manager, f"invalid character {_unicode_name(char)} "
                                                           f"(at position {i})"))
    if causes:
        raise errors.invalid(options_kind, "", causes, "meta.k8s.io")
    return manager or prefix_from_user_agent(user_agent or "")


def _unicode_name(char: str) -> str:
    """Go's ``%#U``: ``U+0009``, with the quoted character when it is printable."""
    code = f"U+{ord(char):04X}"
    return code if not char.isprintable() else f"{code} '{char}'"

