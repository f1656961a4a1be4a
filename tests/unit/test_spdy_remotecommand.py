"""client-go remotecommand over SPDY: protocol negotiation, the streams a request implies, resize and error
stream translation."""

from __future__ import annotations

import json

import pytest

from apiserver.spdy import remotecommand


def test_negotiate_takes_the_clients_first_known_protocol() -> None:
    assert remotecommand.negotiate(["v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io"]) == \
        "v4.channel.k8s.io"
    assert remotecommand.negotiate(["v2.channel.k8s.io", "v4.channel.k8s.io"]) == "v2.channel.k8s.io"
    assert remotecommand.negotiate(["v9.channel.k8s.io"]) is None


@pytest.mark.parametrize(("protocol", "query", "expected"), [
    ("v4.channel.k8s.io", {"stdout": "true", "stderr": "true"}, {"error", "stdout", "stderr"}),
    ("v4.channel.k8s.io", {"stdin": "true", "stdout": "true", "stderr": "true"},
     {"error", "stdin", "stdout", "stderr"}),
    ("v4.channel.k8s.io", {"stdin": "true", "stdout": "true", "stderr": "true", "tty": "true"},
     {"error", "stdin", "stdout", "resize"}),
    ("v2.channel.k8s.io", {"stdout": "true", "tty": "true"}, {"error", "stdout"}),
    ("v4.channel.k8s.io", {}, {"error"}),
])
def test_expected_streams(protocol: str, query: dict[str, str], expected: set[str]) -> None:
    assert remotecommand.expected_streams(protocol, query) == expected


def test_resize_events_split_from_the_byte_stream() -> None:
    buffer = bytearray(b'{"Width":80,"Height":24}\n{"Width":100,')
    assert [json.loads(o) for o in remotecommand.split_json_objects(buffer)] == [{"Width": 80, "Height": 24}]
    assert bytes(buffer) == b'{"Width":100,'
    buffer += b'"Height":30}\n'
    assert [json.loads(o) for o in remotecommand.split_json_objects(buffer)] == [{"Width": 100, "Height": 30}]
    assert remotecommand.split_json_objects(buffer) == [] and not buffer.strip()


def test_error_stream_carries_json_for_v4_and_only_the_failure_message_before() -> None:
    failure = json.dumps({"status": "Failure", "message": "boom", "reason": "NonZeroExitCode"}).encode()
    success = b'{"metadata":{},"status":"Success"}'
    assert remotecommand.error_stream_body("v4.channel.k8s.io", failure) == failure
    assert remotecommand.error_stream_body("v3.channel.k8s.io", failure) == b"boom"
    assert remotecommand.error_stream_body("channel.k8s.io", success) == b""
