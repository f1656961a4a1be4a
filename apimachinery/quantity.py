"""``resource.Quantity``: fixed-point amounts such as ``500m`` CPU or ``1Gi`` memory.

A quantity is held as an exact integer number of nano-units, because that is all Kubernetes keeps: on parse
it rounds any finer value *up* (away from zero) to ``1n`` — "if you asked for some resource you get some".
Alongside the amount it remembers the format it was written in, which decides how it is printed again:

* ``DecimalSI`` (``m``, ``k``, ``M``, … or no suffix) → ``0.5`` prints as ``500m``, ``1000m`` as ``1``;
* ``BinarySI`` (``Ki``, ``Mi``, …) → ``1024Mi`` prints as ``1Gi``; values below 1024 or with a fraction fall
  back to decimal (``0.5Gi`` → ``512Mi``, ``0.5Ki`` → ``512``);
* ``DecimalExponent`` (``1e3``) → ``1.5e3`` prints as ``1500``, ``1.5`` written ``15e-1`` as ``1500e-3``.

Canonical form: no fractional digits, the largest suffix that loses nothing, exponents in steps of three.
Like Go, a parsed string that is already in canonical form is kept verbatim (so ``"1.100"`` stays ``1.100``
and ``"+1"`` stays ``+1``: kube-apiserver echoes those back unchanged too). BinarySI amounts are capped at
2^63-1 on parse. ``value()`` and ``milli_value()`` round up away from zero, like ``Value()``/``MilliValue()``.

Errors are ``ValueError`` with Go's messages (``quantities must match the regular expression …``); the
apiserver wraps them into its decode error.
"""

from __future__ import annotations

import enum
import functools
import re
from fractions import Fraction
from typing import Final

NANO: Final = 10**9
_MAX_INT64: Final = (1 << 63) - 1
# Go's int32 exponent makes absurd exponents meaningless; refuse them rather than build a number with
# billions of digits (tiny ones are harmless: they round up to 1n).
_MAX_DECIMAL_EXPONENT: Final = 1000

SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"


class Format(enum.StrEnum):
    DECIMAL_EXPONENT = "DecimalExponent"
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"


_DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT: Final = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")
_EXPONENT: Final = re.compile(r"[+-]?[0-9]+")


def _round_away(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded away from zero (Kubernetes' "round up")."""
    quotient, remainder = divmod(abs(numerator), denominator)
    quotient += remainder != 0
    return quotient if numerator >= 0 else -quotient


class Quantity:
    """An immutable amount (exact nano-units) plus the format it prints in."""

    __slots__ = ("_nanos", "format", "_text")

    def __init__(self, nanos: int, format: Format = Format.DECIMAL_SI, *, _text: str | None = None) -> None:
        self._nanos = nanos
        self.format = format
        self._text = _text

    # --- constructors ---------------------------------------------------------------------------------------

    @classmethod
    def from_int(cls, value: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewQuantity(value, format)``."""
        return cls(value * NANO, format)

    @classmethod
    def from_milli(cls, milli: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewMilliQuantity(milli, format)``."""
        return cls(milli * 10**6, format)

    # --- values ---------------------------------------------------------------------------------------------

    @property
    def nanos(self) -> int:
        """The exact amount in units of 10^-9."""
        return self._nanos

    @property
    def exact(self) -> Fraction:
        return Fraction(self._nanos, NANO)

    def value(self) -> int:
        """``Value()``: whole units, rounded up away from zero (``1500m`` → 2)."""
        return _round_away(self._nanos, NANO)

    def milli_value(self) -> int:
        """``MilliValue()``: thousandths, rounded up away from zero (``1n`` → 1)."""
        return _round_away(self._nanos, 10**6)

    def is_zero(self) -> bool:
        return self._nanos == 0

    def sign(self) -> int:
        return (self._nanos > 0) - (self._nanos < 0)

    # --- arithmetic and comparison (``Add``/``Sub``/``Cmp``) --------------------------------------------------

    def _combined_format(self, other: Quantity) -> Format:
        # Go: adding to (or subtracting from) a zero quantity adopts the other operand's format.
        return other.format if self._nanos == 0 else self.format

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._nanos + other._nanos, self._combined_format(other))

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._nanos - other._nanos, self._combined_format(other))

    def __mul__(self, factor: int) -> Quantity:
        if not isinstance(factor, int) or isinstance(factor, bool):
            return NotImplemented
        return Quantity(self._nanos * factor, self.format)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity(-self._nanos, self.format)

    def __bool__(self) -> bool:
        return self._nanos != 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self._nanos == other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __lt__(self, other: Quantity) -> bool:
        return self._nanos < other._nanos if isinstance(other, Quantity) else NotImplemented

    def __le__(self, other: Quantity) -> bool:
        return self._nanos <= other._nanos if isinstance(other, Quantity) else NotImplemented

    def __gt__(self, other: Quantity) -> bool:
        return self._nanos > other._nanos if isinstance(other, Quantity) else NotImplemented

    def __ge__(self, other: Quantity) -> bool:
        return self._nanos >= other._nanos if isinstance(other, Quantity) else NotImplemented

    # --- serialisation --------------------------------------------------------------------------------------

    def canonical(self) -> str:
        """The string Kubernetes serialises this quantity as (``String()`` / ``MarshalJSON``)."""
        return self._text if self._text is not None else _canonical(self._nanos, self.format)

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"


def _canonical(nanos: int, format: Format) -> str:
    """``CanonicalizeBytes``: no fraction, the largest suffix that is exact, decimal exponents in steps of 3."""
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    if format is Format.BINARY_SI:
        if magnitude < 1024 * NANO or magnitude % NANO:
            format = Format.DECIMAL_SI  # small or fractional binary amounts print as decimals, never rounded
        else:
            units, power = magnitude // NANO, 0
            while units % 1024 == 0 and power < len(_BINARY_BY_POWER) - 1:
                units //= 1024
                power += 1
            return f"{sign}{units}{_BINARY_BY_POWER[power]}"
    mantissa, exponent = magnitude, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if format is Format.DECIMAL_SI:
        if exponent > 18:  # past "E" there is no suffix: keep the digits in the mantissa
            mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
        return f"{sign}{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
    return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")


# --- parsing ------------------------------------------------------------------------------------------------


def _scan(text: str) -> tuple[bool, str, str, str, bool]:
    """Go's ``parseQuantityString``: (positive, numerator digits, fraction digits, suffix, had any digit)."""
    end = len(text)
    sign_end = 1 if text[0] in "+-" else 0
    positive = text[0] != "-"
    pos = sign_end
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    had_digit = pos > sign_end
    if pos >= end:
        return positive, "0", "", "", had_digit
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    had_digit = had_digit or pos > start
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        had_digit = had_digit or bool(denom)
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(ERR_FORMAT_WRONG)
    return positive, num, denom, text[suffix_start:], had_digit


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) for a suffix, or ``ValueError(ERR_SUFFIX)``."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix, 1):
        exponent = int(suffix[1:])
        if exponent > _MAX_DECIMAL_EXPONENT:
            raise ValueError(ERR_NUMERIC)
        return 10, exponent, Format.DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _fast_path(num: str, denom: str, base: int, exponent: int) -> bool:
    """Whether Go parses this as an int64 (its "fast path") rather than through ``inf.Dec``."""
    if base == 10:
        return 18 - (len(num) + len(denom)) >= 0 and exponent - len(denom) >= -9
    return not denom and 15 - len(num) - (exponent * 3 // 10) - 1 >= 0


def _keeps_text(num: str, denom: str, base: int, exponent: int) -> bool:
    """Would Go keep the input string verbatim? Its fast path does so for input that already looks canonical."""
    if not _fast_path(num, denom, base, exponent):
        return False
    if base == 10:
        shifted = num + denom
        return (exponent - len(denom)) % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    value = int(num)
    return (value << exponent) <= _MAX_INT64 and value & 0x07 != 0


def _to_nanos(positive: bool, num: str, denom: str, base: int, exponent: int) -> int:
    """The exact amount, rounded up (away from zero) to whole nano-units."""
    digits = int(num + denom)
    if digits == 0:
        return 0
    if base == 10:
        power = exponent - len(denom) + 9
        if power >= 0:
            nanos = digits * 10**power
        elif -power > len(num) + len(denom) + 1:
            nanos = 1  # far below 1n: rounds up to the smallest unit without building 10**huge
        else:
            nanos = _round_away(digits, 10**-power)
    else:
        nanos = _round_away(digits * (1 << exponent) * NANO, 10 ** len(denom))
    return int(nanos) if positive else -int(nanos)


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> Quantity:
    if not text:
        raise ValueError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, Format.DECIMAL_SI, _text="0")
    positive, num, denom, suffix, had_digit = _scan(text)
    base, exponent, format = _interpret(suffix)
    if not had_digit and not _fast_path(num, denom, base, exponent):
        raise ValueError(ERR_NUMERIC)  # Go's slow path cannot parse a number without digits ("." and friends)
    nanos = _to_nanos(positive, num, denom, base, exponent)
    if format is Format.BINARY_SI:
        cap = _MAX_INT64 * NANO
        if abs(nanos) > cap:
            nanos = cap if nanos > 0 else -cap
        if 0 < abs(nanos) < NANO:
            format = Format.DECIMAL_SI
    return Quantity(nanos, format, _text=text if _keeps_text(num, denom, base, exponent) else None)


def parse_quantity(value: str | int | float) -> Quantity:
    """Parse what Kubernetes accepts in a quantity field: a string, or a JSON number (read from its text).

    Surrounding whitespace is ignored, as the JSON decoder does; anything else malformed raises ``ValueError``.
    """
    if isinstance(value, bool):
        raise ValueError(ERR_FORMAT_WRONG)
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError(ERR_FORMAT_WRONG)
    return _parse_text(text)


def format_cpu_milli(milli: int) -> str:
    """How Kubernetes prints ``milli`` thousandths of a CPU: ``500`` → ``500m``, ``2000`` → ``2``."""
    return Quantity.from_milli(milli, Format.DECIMAL_SI).canonical()


def format_memory_bytes(count: int) -> str:
    """How Kubernetes prints a byte count held as BinarySI: ``1073741824`` → ``1Gi``, ``1536`` → ``1536``."""
    return Quantity.from_int(count, Format.BINARY_SI).canonical()


def format_cpu_nanos(nanocores: int) -> str:
    """A CPU rate in nanocores as the metrics API prints it (``NewScaledQuantity(n, Nano)``): ``137190727n``,
    ``12345u``, ``2``."""
    return Quantity(nanocores, Format.DECIMAL_SI).canonical()
