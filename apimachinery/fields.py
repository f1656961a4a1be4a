"""Field selectors, as ``k8s.io/apimachinery/pkg/fields`` parses and matches them.

``?fieldSelector=spec.nodeName=node-1,status.phase!=Succeeded`` is an AND of ``field=value``, ``field==value``
and ``field!=value`` terms. Values may escape ``\\``, ``,`` and ``=`` with a backslash; field names are taken
literally up to the first operator, and nothing is trimmed (``"a = b"`` names the field ``"a "``), exactly as
kube-apiserver reads it. A field an object does not have compares as the empty string, so ``spec.nodeName=``
selects unscheduled pods.

Which fields a resource can be selected by is the resource strategy's business (its ``selectable fields``);
this module only parses and matches. ``exact(field)`` exposes the value a selector pins a field to, so storage
can serve ``spec.nodeName=x`` from an index instead of a scan.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final, Literal

from apimachinery.errors import BadRequest

Operator = Literal["=", "!="]

# Checked in this order at each position: "==" before "=" so a value never starts with a stray "=".
_TERM_OPERATORS: Final = ("!=", "==", "=")


class FieldSelector:
    """An immutable AND of ``(field, operator, value)`` terms (operator ``=`` or ``!=``)."""

    __slots__ = ("requirements", "_equal", "_not_equal")

    def __init__(self, requirements: tuple[tuple[str, Operator, str], ...] = ()) -> None:
        self.requirements = requirements
        self._equal = tuple((f, v) for f, op, v in requirements if op == "=")
        self._not_equal = tuple((f, v) for f, op, v in requirements if op == "!=")

    def matches(self, fields: Mapping[str, str]) -> bool:
        for name, value in self._equal:
            if fields.get(name, "") != value:
                return False
        return all(fields.get(name, "") != value for name, value in self._not_equal)

    def empty(self) -> bool:
        return not self.requirements

    def exact(self, field: str) -> str | None:
        """``RequiresExactMatch``: the value the first ``field=value`` term pins ``field`` to, or ``None``."""
        for name, value in self._equal:
            if name == field:
                return value
        return None

    def fields(self) -> frozenset[str]:
        """Every field name the selector mentions (for "field label not supported" checks)."""
        return frozenset(name for name, _, _ in self.requirements)

    def __str__(self) -> str:
        return ",".join(f"{name}{op}{escape_value(value)}" for name, op, value in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash(self.requirements)


_EVERYTHING: Final = FieldSelector()


def everything() -> FieldSelector:
    return _EVERYTHING


def one_term_equal_selector(field: str, value: str) -> FieldSelector:
    """``fields.OneTermEqualSelector``: ``field=value``."""
    return FieldSelector(((field, "=", value),))


def selector_from_set(fields: Mapping[str, str] | None) -> FieldSelector:
    """``fields.SelectorFromSet``: every ``field=value`` (sorted, so ``str()`` is stable)."""
    return FieldSelector(tuple((f, "=", v) for f, v in sorted((fields or {}).items())))


def escape_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=`` for use inside a selector string."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """``fields.UnescapeValue``; a bare ``,``/``=`` or an unknown escape raises ``BadRequest``."""
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Go formats the offending rune with %v, i.e. as its code point.
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not backslash-escaped (the backslashes stay for ``unescape_value``)."""
    terms: list[str] = []
    start, in_slash = 0, False
    for i, ch in enumerate(text):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator occurrence splits the term; the field name is never unescaped."""
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


@functools.lru_cache(maxsize=1024)
def parse_field_selector(text: str) -> FieldSelector:
    """``fields.ParseSelector``: terms are sorted as strings before parsing, empty terms are skipped."""
    if not text:
        return _EVERYTHING
    requirements: list[tuple[str, Operator, str]] = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        name, op, raw_value = split
        requirements.append((name, "!=" if op == "!=" else "=", unescape_value(raw_value)))
    return FieldSelector(tuple(requirements)) if requirements else _EVERYTHING
