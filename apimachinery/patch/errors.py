"""How a patch failure becomes an API status (the mapping is drawn in the package docstring)."""

from __future__ import annotations

from apimachinery.errors import BadRequest, Invalid, RequestEntityTooLarge, StatusError

REJECTED_MESSAGE = "the server rejected our request due to an error in our request"
MAX_JSON_PATCH_OPERATIONS = 10000


class PatchRejected(Invalid):
    """422 with kube-apiserver's generic message; ``detail`` says what actually went wrong."""

    def __init__(self, detail: str) -> None:
        super().__init__(REJECTED_MESSAGE)
        self.detail = detail

    def __str__(self) -> str:
        return f"{REJECTED_MESSAGE} ({self.detail})"


class PatchFailed(StatusError):
    """A strategic patch that could not be merged: kube-apiserver reports these as a 500 with no reason."""

    code = 500
    reason = ""


def bad_request(message: str) -> BadRequest:
    return BadRequest(message)


def too_many_operations(count: int) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(
        f"Request entity too large: The allowed maximum operations in a JSON patch is "
        f"{MAX_JSON_PATCH_OPERATIONS}, got {count}")
