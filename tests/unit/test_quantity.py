"""resource.Quantity: what users write in ``resources.requests`` and what kube-apiserver echoes back."""

from __future__ import annotations

from fractions import Fraction

import pytest

from apimachinery.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Format,
    Quantity,
    format_cpu_milli,
    format_cpu_nanos,
    format_memory_bytes,
    parse_quantity,
)


@pytest.mark.parametrize(("text", "canonical"), [
    # decimal SI: no fractions, the largest exact suffix
    ("0", "0"), ("0n", "0"), ("0m", "0"), ("-0", "0"), ("0Ki", "0"),
    ("0.5", "500m"), ("1.5", "1500m"), ("250m", "250m"), ("1000m", "1"), ("4000m", "4"), ("0.001", "1m"),
    ("0.0001", "100u"), ("5n", "5n"), ("1000M", "1G"), ("50k", "50k"), ("1E", "1E"), ("1.000", "1"),
    ("-1.5", "-1500m"), ("2048", "2048"),
    # binary SI: powers of 1024 are kept binary, fractions and small values fall back to decimal
    ("1Ki", "1Ki"), ("1024Ki", "1Mi"), ("1024Mi", "1Gi"), ("1536Ki", "1536Ki"), ("1.5Gi", "1536Mi"),
    ("0.5Gi", "512Mi"), ("0.5Ki", "512"), ("0.1Ki", "102400m"), ("0.6Gi", "644245094400m"), ("3Ei", "3Ei"),
    # decimal exponent: exponents in steps of three
    ("1e3", "1e3"), ("1.5e3", "1500"), ("15e-1", "1500e-3"), ("1.5e-3", "1500e-6"), ("12e6", "12e6"),
    # input already in canonical form is echoed verbatim, as kube-apiserver does
    ("1.100", "1.100"), ("+1", "+1"), ("1E3", "1E3"), ("1e+3", "1e+3"),
    # finer than 1n rounds up, away from zero
    ("0.0000000001", "1n"), ("-0.0000000001", "-1n"), ("1e-1000", "1e-9"),
    # whitespace around a JSON string value is tolerated
    (" 100m ", "100m"),
])
def test_canonical_form(text: str, canonical: str) -> None:
    assert parse_quantity(text).canonical() == canonical
    assert str(parse_quantity(text)) == canonical


def test_json_numbers_parse_from_their_text() -> None:
    assert parse_quantity(0.5).canonical() == "500m"
    assert parse_quantity(2).canonical() == "2"
    assert parse_quantity(1e-05).canonical() == "10e-6"
    assert parse_quantity(100.0) == parse_quantity("100")


@pytest.mark.parametrize(("text", "milli", "value"), [
    ("100m", 100, 1), ("1.5", 1500, 2), ("2", 2000, 2), ("1n", 1, 1), ("1Ki", 1024000, 1024),
    ("128Mi", 134217728000, 134217728), ("-1.5", -1500, -2), ("0", 0, 0),
])
def test_milli_value_and_value_round_up(text: str, milli: int, value: int) -> None:
    quantity = parse_quantity(text)
    assert quantity.milli_value() == milli
    assert quantity.value() == value


def test_exact_value_is_available() -> None:
    assert parse_quantity("1.5Gi").exact == Fraction(3 * 2**29)
    assert parse_quantity("250m").exact == Fraction(1, 4)
    assert parse_quantity("7n").nanos == 7


@pytest.mark.parametrize(("text", "message"), [
    ("", ERR_FORMAT_WRONG), ("aoeu", ERR_FORMAT_WRONG), ("1.1.M", ERR_FORMAT_WRONG), ("1+1.0M", ERR_FORMAT_WRONG),
    ("1 Gi", ERR_FORMAT_WRONG), ("1Mi.1", ERR_FORMAT_WRONG), ("0.1am", ERR_FORMAT_WRONG),
    ("0.1mi", ERR_SUFFIX), ("1i", ERR_SUFFIX), ("1ki", ERR_SUFFIX), ("1K", ERR_SUFFIX), ("1e", ERR_SUFFIX),
    ("-3.01e-", ERR_SUFFIX), ("1Ki3", ERR_SUFFIX),
    (".e-10", ERR_NUMERIC), ("1e1001", ERR_NUMERIC),
])
def test_invalid_quantities(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_quantity(text)
    assert str(caught.value) == message


def test_non_numbers_are_rejected() -> None:
    with pytest.raises(ValueError):
        parse_quantity(True)
    with pytest.raises(ValueError):
        parse_quantity(float("inf"))


def test_formats_are_remembered() -> None:
    assert parse_quantity("1Gi").format is Format.BINARY_SI
    assert parse_quantity("1G").format is Format.DECIMAL_SI
    assert parse_quantity("1e9").format is Format.DECIMAL_EXPONENT
    assert parse_quantity("0.5Ki").format is Format.BINARY_SI
    assert parse_quantity("0.0005Ki").format is Format.DECIMAL_SI  # below one unit binary becomes decimal


def test_binary_quantities_are_capped_at_int64() -> None:
    assert parse_quantity("16Ei").canonical() == "9223372036854775807"
    assert parse_quantity("-8Ei").value() == -(2**63 - 1)
    assert parse_quantity("1000E").canonical() == "1000E"  # decimal amounts are not capped


def test_arithmetic_and_comparison() -> None:
    requests = parse_quantity("100m") + parse_quantity("250m") + parse_quantity("1")
    assert requests.canonical() == "1350m" and requests.milli_value() == 1350
    assert (parse_quantity("1Gi") - parse_quantity("512Mi")).canonical() == "512Mi"
    assert (parse_quantity("0") + parse_quantity("1Gi")).canonical() == "1Gi"  # zero adopts the other format
    assert (parse_quantity("128Mi") * 3).canonical() == "384Mi"
    assert (-parse_quantity("1")).canonical() == "-1"
    assert parse_quantity("1G") < parse_quantity("1Gi") <= parse_quantity("1024Mi")
    assert parse_quantity("1000m") == parse_quantity("1") and hash(parse_quantity("1000m")) == hash(parse_quantity("1"))
    assert max(parse_quantity("2"), parse_quantity("1500m")).canonical() == "2"
    assert not parse_quantity("0") and parse_quantity("1n")


def test_constructors_match_kubernetes_new_quantity() -> None:
    assert Quantity.from_milli(1500).canonical() == "1500m"
    assert Quantity.from_int(1 << 30, Format.BINARY_SI).canonical() == "1Gi"
    assert Quantity.from_int(1000, Format.BINARY_SI).canonical() == "1k"


def test_table_helpers() -> None:
    assert format_cpu_milli(500) == "500m"
    assert format_cpu_milli(2000) == "2"
    assert format_cpu_milli(0) == "0"
    assert format_memory_bytes(128 * 1024 * 1024) == "128Mi"
    assert format_memory_bytes(1536) == "1536"
    assert format_memory_bytes(1 << 30) == "1Gi"


def test_metrics_api_quantities() -> None:
    """How metrics-server prints usage: CPU as nanocores (NewScaledQuantity(n, Nano)), memory as BinarySI."""
    assert format_cpu_nanos(137190727) == "137190727n"
    assert format_cpu_nanos(12345000) == "12345u"
    assert format_cpu_nanos(250_000_000) == "250m"
    assert format_cpu_nanos(2_000_000_000) == "2"
    assert format_cpu_nanos(0) == "0"
    assert format_memory_bytes(1234 * 1024) == "1234Ki"
    assert format_memory_bytes(11067392) == "10808Ki"
