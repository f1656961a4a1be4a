"""Field selectors: ``kubectl get pods --field-selector …`` and the kubelet's ``spec.nodeName=<node>`` watch."""

from __future__ import annotations

import pytest

from apimachinery.errors import BadRequest
from apimachinery.fields import (
    escape_value,
    everything,
    one_term_equal_selector,
    parse_field_selector,
    selector_from_set,
    unescape_value,
)

RUNNING_ON_N1 = {"metadata.name": "web-1", "spec.nodeName": "n1", "status.phase": "Running"}
PENDING = {"metadata.name": "web-2", "spec.nodeName": "", "status.phase": "Pending"}


@pytest.mark.parametrize(("text", "running", "pending"), [
    ("spec.nodeName=n1", True, False),
    ("spec.nodeName==n1", True, False),
    ("spec.nodeName!=n1", False, True),
    ("spec.nodeName=", False, True),  # unscheduled pods: the field is empty
    ("status.phase!=Succeeded,status.phase!=Failed", True, True),
    ("status.phase=Running,spec.nodeName=n2", False, False),
    ("", True, True),
    (",,", True, True),
])
def test_field_selector_matching(text: str, running: bool, pending: bool) -> None:
    selector = parse_field_selector(text)
    assert (selector.matches(RUNNING_ON_N1), selector.matches(PENDING)) == (running, pending)


def test_missing_field_compares_as_empty_string() -> None:
    assert parse_field_selector("spec.nodeName=").matches({})
    assert not parse_field_selector("spec.nodeName!=").matches({})


def test_escaped_values_round_trip() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert selector.requirements == (("metadata.name", "=", "a,b=c\\d"),)
    assert selector.matches({"metadata.name": "a,b=c\\d"})
    assert str(selector) == r"metadata.name=a\,b\=c\\d"
    assert unescape_value(escape_value("x,=\\y")) == "x,=\\y"


def test_terms_are_sorted_and_double_equals_normalised() -> None:
    selector = parse_field_selector("status.phase==Running,metadata.name!=x")
    assert selector.requirements == (("metadata.name", "!=", "x"), ("status.phase", "=", "Running"))
    assert str(selector) == "metadata.name!=x,status.phase=Running"


def test_field_names_are_taken_literally() -> None:
    selector = parse_field_selector("spec.nodeName = n1")
    assert selector.fields() == {"spec.nodeName "}  # kube-apiserver then rejects the unknown field name
    assert selector.requirements[0][2] == " n1"


def test_exact_pins_a_field_for_indexed_lookups() -> None:
    selector = parse_field_selector("spec.nodeName!=n2,spec.nodeName=n1,status.phase=Running")
    assert selector.exact("spec.nodeName") == "n1"
    assert selector.exact("status.phase") == "Running"
    assert parse_field_selector("spec.nodeName!=n1").exact("spec.nodeName") is None
    assert everything().exact("spec.nodeName") is None and everything().empty()


@pytest.mark.parametrize(("text", "message"), [
    ("spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
    ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
    ("a=b=c", "invalid field selector: unescaped character in value: 61"),
    (r"a=b\x", "invalid field selector: invalid escape sequence: \\x"),
    ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
])
def test_bad_field_selectors_are_bad_requests(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_field_selector(text)
    assert caught.value.message == message


def test_builders() -> None:
    assert str(one_term_equal_selector("spec.nodeName", "n1")) == "spec.nodeName=n1"
    assert selector_from_set({"b": "2", "a": "1"}).requirements == (("a", "=", "1"), ("b", "=", "2"))
    assert parse_field_selector("a=1,b=2") == selector_from_set({"a": "1", "b": "2"})
