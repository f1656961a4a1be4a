"""The label-selector views the workload strategies need, on top of ``apimachinery.labels``.

A ``metav1.LabelSelector`` becomes a ``labels.Selector`` as ``LabelSelectorAsSelector`` does: ``None`` selects
nothing, ``{}`` everything, and a malformed one cannot be converted (``as_selector`` returns ``None``). Its
``str()`` is what ``kubectl get rs -o wide`` and ``/scale``'s ``status.selector`` show; ``go_label_selector``
is how validation errors print the raw struct.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import BadRequest
from apimachinery.labels import Selector, selector_from_label_selector, selector_from_set
from apimachinery.validation import go_quote, go_string_map, go_string_slice

LabelSelector = Mapping[str, Any]


def as_selector(label_selector: LabelSelector | None) -> Selector | None:
    """The selector, or ``None`` when Kubernetes could not convert it (bad operator, key or value)."""
    try:
        return selector_from_label_selector(label_selector)
    except BadRequest:
        return None


def is_valid(label_selector: LabelSelector | None) -> bool:
    return as_selector(label_selector) is not None


def is_empty(label_selector: LabelSelector | None) -> bool:
    """An empty (non-nil) selector: it selects everything, so template labels need not match it."""
    selector = as_selector(label_selector)
    return selector is not None and selector.empty()


def matches(label_selector: LabelSelector | None, labels: Mapping[str, str] | None) -> bool:
    selector = as_selector(label_selector)
    return selector is not None and selector.matches(labels)


def to_string(label_selector: LabelSelector | None) -> str:
    """``labels.Selector.String()``: ``app=web,tier in (a,b),!canary``; ``""`` if it cannot be converted."""
    selector = as_selector(label_selector)
    return "" if selector is None else str(selector)


def format_label_selector(label_selector: LabelSelector | None) -> str:
    """``metav1.FormatLabelSelector``: the string, ``<none>`` when empty, ``<error>`` when invalid."""
    selector = as_selector(label_selector)
    if selector is None:
        return "<error>"
    return str(selector) or "<none>"


def set_matches(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """A ReplicationController's map selector (``labels.SelectorFromSet``); empty selects everything."""
    return selector_from_set(selector).matches(labels)


def set_to_string(selector: Mapping[str, str] | None) -> str:
    return str(selector_from_set(selector))


def go_label_selector(label_selector: LabelSelector | None) -> str:
    """``%#v`` of a ``metav1.LabelSelector`` as validation errors print it."""
    if label_selector is None:
        return "null"
    exprs = label_selector.get("matchExpressions")
    if exprs is None:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    else:
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{go_quote(e.get('key', ''))}, "
            f"Operator:{go_quote(e.get('operator', ''))}, Values:{go_string_slice(e.get('values'))}}}"
            for e in exprs) + "}"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(label_selector.get('matchLabels'))}, " \
           f"MatchExpressions:{rendered}}}"
