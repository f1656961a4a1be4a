"""The envelope of a Kubernetes protobuf body (``Content-Type: application/vnd.kubernetes.protobuf``).

The wire format, as client-go's protobuf serializer writes it::

    "k8s\\x00" + runtime.Unknown{typeMeta: {apiVersion, kind}, raw: <the object message>,
                                 contentEncoding: "", contentType: ""}

``unwrap`` opens it and parses the object message of the kind it names (``kinds``); ``convert.decode`` turns that
into the JSON form. Request bodies and the objects nested in them (``RawExtension``) share it. Every failure is a
400 ``BadRequest``.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError, Message

from apimachinery import errors

from . import kinds
from .gen.k8s_io.apimachinery.pkg.runtime import generated_pb2 as runtime

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


def unwrap(body: bytes) -> tuple[str, str, Message]:
    """(apiVersion, kind, the parsed object message) of a protobuf body; ``BadRequest`` for a bad prefix, an
    unknown kind or bad bytes."""
    if not body.startswith(MAGIC):
        raise errors.BadRequest(f"provided data does not appear to be a protobuf message, expected prefix "
                                f"{list(MAGIC)}")
    envelope = runtime.Unknown()
    _parse(envelope, body[len(MAGIC):], "runtime.Unknown")
    if envelope.contentEncoding:
        raise errors.BadRequest(f'unsupported content encoding "{envelope.contentEncoding}" in a protobuf body')
    if envelope.contentType not in ("", MEDIA_TYPE):
        raise errors.BadRequest(f'unsupported content type "{envelope.contentType}" inside a protobuf body')
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if not kind:
        raise errors.BadRequest("the protobuf body has no kind in its type meta")
    message = kinds.message_type(api_version, kind)()
    _parse(message, envelope.raw, kind)
    return api_version, kind, message


def _parse(message: Message, data: bytes, what: str) -> None:
    try:
        message.ParseFromString(data)
    except (DecodeError, UnicodeDecodeError, ValueError) as err:
        raise errors.BadRequest(f"the body of the request could not be decoded: malformed {what} protobuf: "
                                f"{err}") from None
