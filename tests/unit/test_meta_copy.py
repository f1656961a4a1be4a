"""apimachinery.meta.json_copy: a deep copy of a JSON object (what the apiserver's bootstrap creates from)."""

from __future__ import annotations

from apimachinery.meta import json_copy


def test_json_copy_is_equal_and_shares_nothing() -> None:
    obj = {"metadata": {"name": "x", "labels": {"a": "b"}}, "rules": [{"verbs": ["get"], "n": 1, "f": 0.5,
                                                                        "ok": True, "none": None}]}
    copied = json_copy(obj)
    assert copied == obj
    copied["metadata"]["labels"]["a"] = "c"
    copied["rules"][0]["verbs"].append("list")
    assert obj["metadata"]["labels"] == {"a": "b"} and obj["rules"][0]["verbs"] == ["get"]
