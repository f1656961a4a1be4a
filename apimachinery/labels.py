"""Label selectors, as ``k8s.io/apimachinery/pkg/labels`` parses, prints and matches them.

Three ways in, one ``Selector`` out:

* ``parse_selector("app=web,tier in (a,b),!canary")`` — the ``?labelSelector=`` / ``kubectl -l`` string syntax.
  The lexer and the recursive-descent parser follow Go's token for token, so odd inputs (``x in (a,,b)``,
  ``in=in``, ``x=``) mean what they mean to kube-apiserver and errors carry its wording
  (``unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt``).
* ``selector_from_label_selector({"matchLabels": …, "matchExpressions": […]})`` — a ``metav1.LabelSelector``
  (``LabelSelectorAsSelector``): ``None`` selects nothing, ``{}`` selects everything.
* ``selector_from_set({"app": "web"})`` — a ReplicationController's map selector (``SelectorFromSet``).

Matching runs once per object per watcher, so a ``Selector`` is immutable and precompiled: plain equality
requirements (the common case) become ``(key, value)`` pairs checked with one dict lookup each, and every
set-based requirement keeps its values as a ``frozenset``.

Key and value rules (``IsQualifiedName`` / ``IsValidLabelValue``) live in ``apimachinery.validation``; this
module only reuses them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from apimachinery.errors import BadRequest
from apimachinery.validation import go_quote, go_string_slice, is_qualified_name, is_valid_label_value

Operator = Literal["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]

EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
IN: Final = "in"
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

# selection.Operator order as Go lists it in "expected: …" messages.
_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS: Final = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)
_INT64 = re.compile(r"[+-]?[0-9]+")


def validate_label_key(key: str) -> list[str]:
    """Why ``key`` is not a valid label key (``IsQualifiedName``), in Kubernetes' words; empty when valid."""
    return is_qualified_name(key)


def validate_label_value(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (``IsValidLabelValue``); empty when valid."""
    return is_valid_label_value(value)


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or ``None`` where Go would return an error (Gt/Lt operands)."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(1 << 63) <= number < (1 << 63) else None


# --- requirements -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` clause; build it with ``new_requirement`` (which validates) or the parsers."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    _set: frozenset[str] = field(init=False, repr=False, compare=False)
    _bound: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_set", frozenset(self.values))
        bound = parse_int64(self.values[0]) if len(self.values) == 1 else None
        object.__setattr__(self, "_bound", bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``: NotIn and != also match objects that lack the key; Gt/Lt need an integer."""
        op = self.operator
        if op in (EQUALS, DOUBLE_EQUALS, IN):
            value = labels.get(self.key)
            return value is not None and value in self._set
        if op in (NOT_IN, NOT_EQUALS):
            value = labels.get(self.key)
            return value is None or value not in self._set
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            value = labels.get(self.key)
            if value is None or self._bound is None:
                return False
            number = parse_int64(value)
            if number is None:
                return False
            return number > self._bound if op == GREATER_THAN else number < self._bound
        return False

    def __str__(self) -> str:
        """``Requirement.String``: ``!key``, ``key``, ``key=v``, ``key in (a,b)`` with sorted values."""
        op = self.operator
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        if op == EXISTS:
            return self.key
        values = ",".join(self.values if len(self.values) == 1 else sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({values})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{symbol}{values}"


def new_requirement(key: str, operator: str, values: Sequence[str] = ()) -> Requirement:
    """``labels.NewRequirement``: validate and build, raising ``BadRequest`` with the aggregated field errors."""
    errors = _requirement_errors(key, operator, values, key_path="key")
    if errors:
        raise BadRequest(_aggregate(errors))
    return Requirement(key, operator, tuple(values))  # type: ignore[arg-type]


def _requirement_errors(key: str, operator: str, values: Sequence[str], key_path: str | None) -> list[str]:
    """``NewRequirement``'s checks, each rendered like a Go ``field.Error`` (``values[0][key]: Invalid value: …``)."""
    errors: list[str] = []
    if key_path is not None:
        key_errors = validate_label_key(key)
        if key_errors:
            errors.append(_field_error(key_path, go_quote(key), "; ".join(key_errors)))
    if operator in (IN, NOT_IN):
        if not values:
            errors.append(_field_error("values", _go_slice(values),
                                       "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(values) != 1:
            errors.append(_field_error("values", _go_slice(values),
                                       "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            errors.append(_field_error("values", _go_slice(values),
                                       "values set must be empty for exists and does not exist"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            errors.append(_field_error("values", _go_slice(values),
                                       "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, value in enumerate(values):
            if parse_int64(value) is None:
                errors.append(_field_error(f"values[{i}]", go_quote(value),
                                           "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        supported = ", ".join(go_quote(op) for op in _VALID_OPERATORS)
        errors.append(f"operator: Unsupported value: {go_quote(operator)}: supported values: {supported}")
    for i, value in enumerate(values):
        value_errors = validate_label_value(value)
        if value_errors:
            errors.append(_field_error(f"values[{i}][{key}]", go_quote(value), "; ".join(value_errors)))
    return errors


def _field_error(path: str, rendered_value: str, detail: str) -> str:
    return f"{path}: Invalid value: {rendered_value}: {detail}"


def _go_slice(values: Sequence[str]) -> str:
    return go_string_slice(values) if values else "[]string(nil)"


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message as is, several deduplicated inside brackets."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --- selectors ----------------------------------------------------------------------------------------------


class Selector:
    """An immutable AND of requirements, sorted by key as Go sorts them (which fixes ``str()``)."""

    __slots__ = ("requirements", "_equal", "_other", "_nothing")

    def __init__(self, requirements: Iterable[Requirement] = (), *, _nothing: bool = False) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))
        self._nothing = _nothing
        # Equality clauses are the hot path (ReplicationController selectors): one dict lookup each.
        self._equal = tuple((r.key, r.values[0]) for r in self.requirements
                            if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1)
        self._other = tuple(r for r in self.requirements
                            if not (r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        labels = labels or {}
        for key, value in self._equal:
            if labels.get(key) != value:
                return False
        return all(requirement.matches(labels) for requirement in self._other)

    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Nothing()`` is not empty: it restricts all)."""
        return not self._nothing and not self.requirements

    def is_nothing(self) -> bool:
        return self._nothing

    def requires_exact_match(self, key: str) -> str | None:
        """``RequiresExactMatch``: the single value the first requirement on ``key`` pins it to, if any."""
        for requirement in self.requirements:
            if requirement.key == key:
                if requirement.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(requirement.values) == 1:
                    return requirement.values[0]
                return None
        return None

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with more requirements (``Nothing()`` stays nothing)."""
        if self._nothing:
            return self
        return Selector((*self.requirements, *requirements))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "Selector(<nothing>)" if self._nothing else f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Selector) and self._nothing == other._nothing
                and self.requirements == other.requirements)

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


_EVERYTHING: Final = Selector()
_NOTHING: Final = Selector(_nothing=True)


def everything() -> Selector:
    """A selector that matches all objects (``labels.Everything()``)."""
    return _EVERYTHING


def nothing() -> Selector:
    """A selector that matches no objects (``labels.Nothing()``)."""
    return _NOTHING


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """``SelectorFromSet``: ``key=value`` for each entry, unvalidated; an empty or missing map selects everything."""
    if not labels:
        return _EVERYTHING
    return Selector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


_LABEL_SELECTOR_OPERATORS: Final = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: ``None`` selects nothing, ``{}`` everything; bad input → ``BadRequest``."""
    if label_selector is None:
        return _NOTHING
    match_labels = label_selector.get("matchLabels") or {}
    match_expressions = label_selector.get("matchExpressions") or []
    if not match_labels and not match_expressions:
        return _EVERYTHING
    requirements = [new_requirement(k, EQUALS, [v]) for k, v in match_labels.items()]
    for expression in match_expressions:
        operator = _LABEL_SELECTOR_OPERATORS.get(expression.get("operator", ""))
        if operator is None:
            raise BadRequest(f"{go_quote(str(expression.get('operator', '')))} is not a valid label selector operator")
        requirements.append(new_requirement(expression.get("key", ""), operator, list(expression.get("values") or [])))
    return Selector(requirements)


_NODE_SELECTOR_OPERATORS: Final = {**_LABEL_SELECTOR_OPERATORS, "Gt": GREATER_THAN, "Lt": LESS_THAN}


@functools.lru_cache(maxsize=4096)
def _node_requirement(key: str, operator: str, values: tuple[str, ...]) -> Requirement | None:
    op = _NODE_SELECTOR_OPERATORS.get(operator)
    if op is None or _requirement_errors(key, op, values, key_path="key"):
        return None
    return Requirement(key, op, values)  # type: ignore[arg-type]


def node_selector_requirement(requirement: Mapping[str, Any]) -> Requirement | None:
    """A ``NodeSelectorRequirement`` as a label ``Requirement``, or ``None`` when Kubernetes would reject it."""
    return _node_requirement(str(requirement.get("key", "")), str(requirement.get("operator", "")),
                             tuple(requirement.get("values") or ()))


def node_selector_requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    """Does a node with ``labels`` satisfy this requirement? Invalid requirements match nothing, as in the scheduler."""
    compiled = node_selector_requirement(requirement)
    return compiled is not None and compiled.matches(labels or {})


# --- the string syntax: lexer ------------------------------------------------------------------------------

_EOS, _CLOSED_PAR, _COMMA, _NOT, _DOUBLE_EQUALS, _EQUALS, _GT, _IDENTIFIER, _IN, _LT, _NOT_EQUALS, _NOT_IN, \
    _OPEN_PAR = range(13)
_STRING_TO_TOKEN: Final = {
    ")": _CLOSED_PAR, ",": _COMMA, "!": _NOT, "==": _DOUBLE_EQUALS, "=": _EQUALS, ">": _GT, "in": _IN,
    "<": _LT, "!=": _NOT_EQUALS, "notin": _NOT_IN, "(": _OPEN_PAR,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")

Token = tuple[int, str]


def _lex(text: str) -> list[Token]:
    """Go's ``Lexer``: identifiers run to whitespace or a special symbol; symbols are matched greedily."""
    tokens: list[Token] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            tokens.append((_EOS, ""))
            return tokens
        if text[pos] in _SPECIAL:
            two = text[pos:pos + 2]
            symbol = two if two in ("!=", "==") else text[pos]  # Go's greedy match can only ever pair these
            tokens.append((_STRING_TO_TOKEN[symbol], symbol))
            pos += len(symbol)
        else:
            start = pos
            while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            tokens.append((_STRING_TO_TOKEN.get(word, _IDENTIFIER), word))  # only "in"/"notin" can hit


# --- the string syntax: parser -----------------------------------------------------------------------------


class _ParseError(Exception):
    pass


class _Parser:
    """Go's recursive-descent ``Parser``; ``in``/``notin`` read as identifiers wherever a value may stand."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.position = 0

    def _lookahead(self, values: bool) -> Token:
        tok, lit = self.tokens[self.position]
        return (_IDENTIFIER, lit) if values and tok in (_IN, _NOT_IN) else (tok, lit)

    def _consume(self, values: bool) -> Token:
        token = self._lookahead(values)
        self.position += 1
        return token

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._lookahead(True)
            if tok in (_IDENTIFIER, _NOT):
                try:
                    requirements.append(self._requirement())
                except _ParseError as err:
                    raise _ParseError(f"unable to parse requirement: {err}") from None
                tok, lit = self._consume(True)
                if tok == _EOS:
                    return requirements
                if tok != _COMMA:
                    raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
                tok2, lit2 = self._lookahead(True)
                if tok2 not in (_IDENTIFIER, _NOT):
                    raise _ParseError(f"found '{lit2}', expected: identifier after ','")
            elif tok == _EOS:
                return requirements
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        key, operator = self._key_and_inferred_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return self._build(key, operator, [])
        operator = self._operator()
        values = self._values() if operator in (IN, NOT_IN) else self._exact_value()
        return self._build(key, operator, sorted(values))

    def _build(self, key: str, operator: Operator, values: list[str]) -> Requirement:
        errors = _requirement_errors(key, operator, values, key_path=None)  # the key was checked by the parser
        if errors:
            raise _ParseError(_aggregate(errors))
        return Requirement(key, operator, tuple(values))

    def _key_and_inferred_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        tok, lit = self._consume(True)
        if tok == _NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self._consume(True)
        if tok != _IDENTIFIER:
            raise _ParseError(f"found '{lit}', expected: identifier")
        key_errors = validate_label_key(lit)
        if key_errors:
            raise _ParseError(_field_error("<nil>", go_quote(lit), "; ".join(key_errors)))
        if self._lookahead(True)[0] in (_EOS, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return lit, operator

    def _operator(self) -> Operator:
        tok, lit = self._consume(False)
        operator = {_IN: IN, _EQUALS: EQUALS, _DOUBLE_EQUALS: DOUBLE_EQUALS, _GT: GREATER_THAN, _LT: LESS_THAN,
                    _NOT_IN: NOT_IN, _NOT_EQUALS: NOT_EQUALS}.get(tok)
        if operator is None:
            raise _ParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return operator  # type: ignore[return-value]

    def _values(self) -> set[str]:
        tok, lit = self._consume(True)
        if tok != _OPEN_PAR:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self._lookahead(True)
        if tok in (_IDENTIFIER, _COMMA):
            values = self._identifiers_list()
            if self._consume(True)[0] != _CLOSED_PAR:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSED_PAR:  # "()" is the set holding the empty string
            self._consume(True)
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self._consume(True)
            if tok == _IDENTIFIER:
                values.add(lit)
                tok2, lit2 = self._lookahead(True)
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSED_PAR:
                    return values
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:  # "(,", ",,", ",)" all stand for an empty value
                if not values:
                    values.add("")
                tok2 = self._lookahead(True)[0]
                if tok2 == _CLOSED_PAR:
                    values.add("")
                    return values
                if tok2 == _COMMA:
                    self._consume(True)
                    values.add("")
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._lookahead(True)[0] in (_EOS, _COMMA):
            return {""}
        tok, lit = self._consume(True)
        if tok == _IDENTIFIER:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


@functools.lru_cache(maxsize=1024)
def parse_selector(text: str) -> Selector:
    """Parse the string syntax (``labels.Parse``); malformed input raises ``BadRequest`` with Go's message.

    Cached: watchers and list calls repeat the same few selector strings, and a ``Selector`` is immutable.
    """
    try:
        requirements = _Parser(text).parse()
    except _ParseError as err:
        raise BadRequest(str(err)) from None
    return Selector(requirements) if requirements else _EVERYTHING
