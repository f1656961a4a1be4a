"""apiserver.registry.decoder: Go's typed decoding — integer ranges by format, IntOrString, unknown field names."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery import errors
from apimachinery.validation import go_quote
from apiserver.openapi.documents import swagger
from apiserver.registry import decoder
from apiserver.registry.decoder import Decoder

DECODER = Decoder(swagger()["definitions"])


def decode(obj: dict[str, Any], kind: str = "Deployment", group: str = "apps", mode: str = "Ignore") -> list[str]:
    return DECODER.decode(obj, group, "v1", kind, mode)


def deployment(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "d"}, "spec": spec}


@pytest.mark.parametrize(("value", "literal"), [(2**31, "2147483648"), (-(2**31) - 1, "-2147483649"),
                                                (1.5, "1.5"), (2.0, "2.0"), (1e19, "10000000000000000000")])
def test_int32_out_of_range_or_not_whole_is_gos_error(value: Any, literal: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        decode(deployment(replicas=value))
    assert caught.value.message == ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
                                    f"unmarshal number {literal} into Go struct field DeploymentSpec.spec.replicas of "
                                    "type int32")


def test_int32_bounds_are_taken_and_stay_ints() -> None:
    for value in (2**31 - 1, -(2**31), 0):
        obj = deployment(replicas=value)
        decode(obj)
        assert obj["spec"]["replicas"] == value and type(obj["spec"]["replicas"]) is int


def test_int64_fields_take_int64() -> None:
    pod = {"spec": {"terminationGracePeriodSeconds": 2**63 - 1}}
    decode(pod, "Pod", "")
    with pytest.raises(errors.BadRequest, match="number 9223372036854775808 into Go struct field "
                                                "PodSpec.spec.terminationGracePeriodSeconds of type int64"):
        decode({"spec": {"terminationGracePeriodSeconds": 2**63}}, "Pod", "")
    with pytest.raises(errors.BadRequest, match=r"cannot unmarshal string into Go struct field "
                                                r"PodSecurityContext.spec.securityContext.supplementalGroups of type "
                                                r"int64"):
        decode({"spec": {"securityContext": {"supplementalGroups": [1, "2"]}}}, "Pod", "")


@pytest.mark.parametrize(("value", "what"), [(2**31, "number 2147483648"), (1.5, "number 1.5"), (True, "bool"),
                                             ({}, "object")])
def test_int_or_string_reads_numbers_into_int32(value: Any, what: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        decode(deployment(strategy={"rollingUpdate": {"maxSurge": value}}))
    assert caught.value.message.endswith(f"cannot unmarshal {what} into Go struct field "
                                         "RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32")
    for ok in (3, "25%"):
        decode(deployment(strategy={"rollingUpdate": {"maxSurge": ok}}))


def test_unknown_field_names_are_go_quoted() -> None:
    obj = deployment(replicas=1)
    obj["spec"]["bad\nname\x00\""] = 1
    assert decode(obj, mode="Warn") == ['unknown field "spec.bad\\nname\\x00\\""']
    assert "bad\nname\x00\"" not in obj["spec"]


def test_go_quote_is_strconv_quote() -> None:
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("\a\b\f\n\r\t\v") == '"\\a\\b\\f\\n\\r\\t\\v"'
    assert go_quote("\x01\x7f\x85\u200b😀é") == '"\\x01\\x7f\\u0085\\u200b😀é"'


def test_an_update_walks_only_what_differs_from_the_stored_object(monkeypatch: pytest.MonkeyPatch) -> None:
    def pod(cpu: str, image: str) -> dict[str, Any]:
        return {"metadata": {"name": "p", "labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}},
                                        {"name": "d", "image": image}]},
                "status": {"phase": "Pending"}}

    stored = pod("100m", "busybox")
    assert DECODER.decode(stored, "", "v1", "Pod") == []
    walked: list[str] = []
    real = decoder._Walk.value

    def counting(self: Any, value: Any, schema: Any, parent: str, path: str, old: Any = None) -> Any:
        walked.append(path)
        return real(self, value, schema, parent, path, old)

    monkeypatch.setattr(decoder._Walk, "value", counting)
    update = pod("0.5", "nginx")  # one quantity and one image changed, a status field added, an unknown field
    update["status"]["podIP"] = "10.0.0.1"
    update["spec"]["containers"][1]["bogus"] = 1
    assert DECODER.decode(update, "", "v1", "Pod", "Warn", old=stored) == ['unknown field "spec.containers.bogus"']
    assert "metadata" not in walked and "status.phase" not in walked  # equal to the stored object: not walked
    assert "spec.containers.image" in walked and "status.podIP" in walked
    whole = pod("0.5", "nginx")
    whole["status"]["podIP"] = "10.0.0.1"
    DECODER.decode(whole, "", "v1", "Pod")
    assert update == whole  # what decoding it whole gives: the quantity canonical ("500m"), the unknown field pruned
    assert update["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"


@pytest.mark.parametrize(("field", "stored", "sent"), [("replicas", 2, 2.0), ("paused", True, 1),
                                                       ("minReadySeconds", 0, False)])
def test_an_update_equal_to_the_stored_value_but_of_another_json_type_is_still_refused(
        field: str, stored: Any, sent: Any) -> None:
    old = deployment(**{field: stored})
    decode(old)
    new = deployment(**{field: sent})
    assert new == old  # Python's == takes them for equal
    with pytest.raises(errors.BadRequest, match="cannot unmarshal"):
        DECODER.decode(new, "apps", "v1", "Deployment", "Ignore", old=old)
