"""apimachinery.errors: the ``Status`` bodies kube-apiserver sends, and back."""

from __future__ import annotations

from apimachinery import errors


def test_not_found_always_carries_details() -> None:
    """kube-apiserver's 404s all have ``details``: ``{}`` for a path it does not serve, ``{name, kind}`` for a
    missing object — clients tell the two apart by ``details.name`` (kubectl debug reads it unguarded)."""
    no_route = errors.NotFound("the server could not find the requested resource").to_status()
    assert (no_route["code"], no_route["reason"], no_route["details"]) == (404, "NotFound", {})
    missing = errors.not_found("pods", "web").to_status()
    assert (missing["message"], missing["details"]) == ('pods "web" not found', {"name": "web", "kind": "pods"})
    assert "details" not in errors.BadRequest("bad").to_status()
    again = errors.StatusError.from_status(no_route)
    assert type(again) is errors.NotFound and again.to_status() == no_route
