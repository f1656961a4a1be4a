"""Range- and shape-checked input (issue 21): numbers that do not fit their Go type, bodies too big or too deep
for the server or for etcd, and responses that always arrive whole — each answered as kube-apiserver answers it,
nothing written, the server serving on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.builders import make_pod, make_rc

RC_OVERFLOW = ('ReplicationController in version "v1" cannot be handled as a ReplicationController: json: cannot '
               'unmarshal number 2147483648 into Go struct field ReplicationControllerSpec.spec.replicas of type int32')


def rcs(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/replicationcontrollers"


def deployments(ns: str) -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments"


def status_of(resp: httpx.Response, code: int, reason: str) -> str:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["reason"] == reason and body["code"] == code
    return str(body["message"])


def post_raw(client: httpx.Client, path: str, text: str, content_type: str = "application/json",
             **params: str) -> httpx.Response:
    return client.post(path, content=text.encode(), headers={"Content-Type": content_type}, params=params)


def rc_json(replicas: str) -> str:
    """An RC body with ``replicas`` spelled exactly as given (JSON number literal)."""
    body = json.dumps(make_rc("web", 1))
    return body.replace('"replicas": 1', f'"replicas": {replicas}', 1)


def test_rc_replicas_overflow_is_kubes_400(client: httpx.Client, ns: str) -> None:
    for params in ({"dryRun": "All"}, {}):
        assert status_of(post_raw(client, rcs(ns), rc_json("2147483648"), **params), 400, "BadRequest") == RC_OVERFLOW
    message = status_of(post_raw(client, rcs(ns), rc_json("9223372036854775808")), 400, "BadRequest")
    assert "cannot unmarshal number 9223372036854775808 into Go struct field ReplicationControllerSpec.spec." \
           "replicas of type int32" in message
    message = status_of(post_raw(client, rcs(ns), rc_json("-2147483649")), 400, "BadRequest")
    assert "number -2147483649 into Go struct field" in message
    assert client.get(rcs(ns)).json()["items"] == []


def test_deployment_replicas_two_to_the_forty_is_400(client: httpx.Client, ns: str) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 2**40, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    message = status_of(client.post(deployments(ns), json=dep), 400, "BadRequest")
    assert message == ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number '
                       '1099511627776 into Go struct field DeploymentSpec.spec.replicas of type int32')


def test_fraction_and_exponent_where_an_integer_is_expected(client: httpx.Client, ns: str) -> None:
    for literal in ("1.5", "2.0", "1e3"):
        message = status_of(post_raw(client, rcs(ns), rc_json(literal)), 400, "BadRequest")
        assert "json: cannot unmarshal number " in message
        assert "into Go struct field ReplicationControllerSpec.spec.replicas of type int32" in message
    # int64: a pod's terminationGracePeriodSeconds
    pod = make_pod("p").build()
    pod["spec"]["terminationGracePeriodSeconds"] = 2**63
    message = status_of(client.post(f"/api/v1/namespaces/{ns}/pods", json=pod), 400, "BadRequest")
    assert message.endswith("cannot unmarshal number 9223372036854775808 into Go struct field "
                            "PodSpec.spec.terminationGracePeriodSeconds of type int64")


def test_yaml_whole_numbers_are_integers_and_stored_as_ints(client: httpx.Client, ns: str) -> None:
    """sigs.k8s.io/yaml turns YAML into JSON first: ``replicas: 2.0`` is 2 (stored as an int), 2.5 is refused."""
    yaml_rc = ("apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web}\nspec:\n  replicas: {n}\n"
               "  selector: {app: web}\n  template:\n    metadata: {labels: {app: web}}\n"
               "    spec: {containers: [{name: c, image: busybox}]}\n")
    resp = post_raw(client, rcs(ns), yaml_rc.replace("{n}", "2.0"), "application/yaml")
    assert resp.status_code == 201, resp.text
    assert resp.content.count(b'"replicas":2,') == 1 and b"2.0" not in resp.content
    stored = client.get(f"{rcs(ns)}/web")
    assert stored.json()["spec"]["replicas"] == 2 and b'"replicas":2,' in stored.content
    resp = post_raw(client, rcs(ns), yaml_rc.replace("{n}", "2147483648").replace("web}", "big}", 1),
                    "application/yaml")
    assert status_of(resp, 400, "BadRequest") == RC_OVERFLOW


def test_patches_are_range_checked(client: httpx.Client, ns: str) -> None:
    assert client.post(rcs(ns), json=make_rc("web", 1)).status_code == 201
    path = f"{rcs(ns)}/web"
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        resp = client.patch(path, content=b'{"spec":{"replicas":2147483648}}', headers={"Content-Type": content_type})
        assert status_of(resp, 400, "BadRequest") == RC_OVERFLOW
    resp = client.patch(path, content=b'[{"op":"replace","path":"/spec/replicas","value":4294967296}]',
                        headers={"Content-Type": "application/json-patch+json"})
    assert "cannot unmarshal number 4294967296 into Go struct field" in status_of(resp, 400, "BadRequest")
    resp = client.patch(path, content=b'[{"op":"replace","path":"/spec/replicas","value":3.5}]',
                        headers={"Content-Type": "application/json-patch+json"})
    assert "cannot unmarshal number 3.5 into Go struct field" in status_of(resp, 400, "BadRequest")
    resp = client.patch(path, content=b"apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web}\n"
                        b"spec:\n  replicas: 2147483648\n", params={"fieldManager": "t", "force": "true"},
                        headers={"Content-Type": "application/apply-patch+yaml"})
    assert "cannot unmarshal number 2147483648 into Go struct field" in status_of(resp, 400, "BadRequest")
    # a merge patch's whole number (kube reads it as a float64 and writes it back as 3) is taken
    resp = client.patch(path, content=b'{"spec":{"replicas":3.0}}',
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    assert b'"replicas":3,' in resp.content
    assert client.get(path).json()["spec"]["replicas"] == 3


def test_unknown_field_with_control_characters_gets_a_whole_response(client: httpx.Client, ns: str) -> None:
    pod = make_pod("p").build()
    pod["spec"]["bad\nfield"] = 1
    pod["metadata"]["bad\x00\x7f\"name"] = 1
    resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=pod)
    assert resp.status_code == 201, resp.text
    assert resp.json()["metadata"]["name"] == "p"
    warnings = resp.headers.get_list("warning")
    assert 'unknown field \\"spec.bad\\\\nfield\\"' in " ".join(warnings), warnings
    assert '299 - "unknown field \\"metadata.bad\\\\x00\\\\x7f\\\\\\"name\\""' in warnings, warnings
    strict = client.post(f"/api/v1/namespaces/{ns}/pods", json={**pod, "metadata": {"name": "q"}},
                         params={"fieldValidation": "Strict"})
    assert status_of(strict, 400, "BadRequest") == 'strict decoding error: unknown field "spec.bad\\nfield"'


def test_yaml_nested_ten_thousand_deep_is_400(client: httpx.Client, ns: str) -> None:
    deep = "metadata: {name: p}\nspec: " + "[" * 10_000 + "]" * 10_000 + "\n"
    message = status_of(post_raw(client, f"/api/v1/namespaces/{ns}/pods", deep, "application/yaml"), 400,
                        "BadRequest")
    assert "exceeded max depth" in message
    block = "metadata: {name: p}\nspec:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(600))
    message = status_of(post_raw(client, f"/api/v1/namespaces/{ns}/pods", block, "application/yaml"), 400,
                        "BadRequest")
    assert "exceeded max depth" in message
    deep_json = '{"metadata":{"name":"p"},"spec":' + "[" * 10_000 + "]" * 10_000 + "}"
    message = status_of(post_raw(client, f"/api/v1/namespaces/{ns}/pods", deep_json), 400, "BadRequest")
    assert "exceeded max depth" in message
    assert client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"] == []
    assert client.get("/healthz").text == "ok"


def test_free_form_data_nested_within_the_limit_is_stored(client: httpx.Client, ns: str) -> None:
    """A ControllerRevision's data is free-form JSON: nesting up to the limit (200) is stored, read back and listed."""
    data: object = {"leaf": 1}
    for _ in range(97):  # 196 levels with the object around it
        data = {"x": [data]}
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "revision": 1,
                "data": data}
    path = f"/apis/apps/v1/namespaces/{ns}/controllerrevisions"
    assert client.post(path, json=revision).status_code == 201
    assert client.get(f"{path}/r").json()["data"] == data
    assert client.patch(f"{path}/r", json={"metadata": {"labels": {"a": "b"}}},
                        headers={"Content-Type": "application/merge-patch+json"}).status_code == 200


def test_body_over_three_mebibytes_is_413(client: httpx.Client, ns: str) -> None:
    cm = {"metadata": {"name": "big"}, "data": {"a": "x" * (3 * 1024 * 1024)}}
    message = status_of(client.post(f"/api/v1/namespaces/{ns}/configmaps", json=cm), 413, "RequestEntityTooLarge")
    assert message == "Request entity too large: limit is 3145728"


def test_object_over_etcds_request_limit_is_413_and_not_written(client: httpx.Client, ns: str) -> None:
    pod = make_pod("many").build()
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": "busybox"} for i in range(10_000)]
    resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=pod)
    message = status_of(resp, 413, "RequestEntityTooLarge")
    assert "etcdserver: request is too large" in message and "1572864" in message
    assert client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"] == []
    assert client.get("/healthz").text == "ok"


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


def test_list_parameters_that_do_not_convert_are_400(client: httpx.Client, ns: str) -> None:
    for params, message in [({"timeoutSeconds": "abc"}, 'strconv.ParseInt: parsing "abc": invalid syntax'),
                            ({"limit": "1.5"}, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
                            ({"timeoutSeconds": "9223372036854775808", "watch": "true"},
                             'strconv.ParseInt: parsing "9223372036854775808": value out of range')]:
        assert status_of(client.get(pods(ns), params=params), 400, "BadRequest") == message


def test_list_option_combinations_are_kubes_422(client: httpx.Client, ns: str) -> None:
    cases = [
        ({"resourceVersionMatch": "Exact"}, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
         "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
        ({"resourceVersionMatch": "Newest", "resourceVersion": "1"}, 'ListOptions.meta.k8s.io "" is invalid: '
         'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'),
        ({"resourceVersionMatch": "Exact", "resourceVersion": "0"}, 'ListOptions.meta.k8s.io "" is invalid: '
         'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
        ({"sendInitialEvents": "true"}, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
         "sendInitialEvents is forbidden for list"),
        ({"watch": "1", "sendInitialEvents": "true"}, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
         "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
        ({"watch": "yes", "resourceVersionMatch": "Exact"}, 'ListOptions.meta.k8s.io "" is invalid: '
         "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
         'provided, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]'),
    ]
    for params, message in cases:
        body_message = status_of(client.get(pods(ns), params=params), 422, "Invalid")
        assert body_message == message, params
    resp = client.get(pods(ns), params={"resourceVersionMatch": "Exact"})
    assert resp.json()["details"] == {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
        {"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
         "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"}]}
    # what kube's conversion takes: watch=false is a list, a negative limit is no limit
    assert client.get(pods(ns), params={"watch": "false", "limit": "-1"}).json()["kind"] == "PodList"


def test_watch_list_without_initial_events_starts_now(client: httpx.Client, ns: str) -> None:
    assert client.post(pods(ns), json=make_pod("old").build()).status_code == 201
    params = {"watch": "true", "sendInitialEvents": "false", "resourceVersionMatch": "NotOlderThan",
              "timeoutSeconds": "1"}
    with client.stream("GET", pods(ns), params=params) as resp:
        assert resp.status_code == 200
        lines = [json.loads(line) for line in resp.iter_lines() if line]
    assert [e for e in lines if e["type"] != "BOOKMARK"] == []


def test_log_options_are_validated_as_kube_does(client: httpx.Client, ns: str) -> None:
    log = f"{pods(ns)}/nopod/log"
    cases = [
        ({"tailLines": "-1"}, 'PodLogOptions "nopod" is invalid: tailLines: Invalid value: -1: must be greater than '
         "or equal to 0"),
        ({"sinceSeconds": "-5"}, 'PodLogOptions "nopod" is invalid: sinceSeconds: Invalid value: -5: must be '
         "greater than 0"),
        ({"limitBytes": "0"}, 'PodLogOptions "nopod" is invalid: limitBytes: Invalid value: 0: must be greater '
         "than 0"),
        ({"tailLines": "-1", "limitBytes": "-1"}, 'PodLogOptions "nopod" is invalid: [tailLines: Invalid value: -1: '
         "must be greater than or equal to 0, limitBytes: Invalid value: -1: must be greater than 0]"),
    ]
    for params, message in cases:
        assert status_of(client.get(log, params=params), 422, "Invalid") == message
    both = status_of(client.get(log, params={"sinceSeconds": "5", "sinceTime": "2026-01-01T00:00:00Z"}), 422,
                     "Invalid")
    assert "at most one of `sinceTime` or `sinceSeconds` may be specified" in both
    assert status_of(client.get(log, params={"tailLines": "x"}), 400, "BadRequest") == \
        'strconv.ParseInt: parsing "x": invalid syntax'
    assert status_of(client.get(log, params={"sinceTime": "yesterday"}), 400, "BadRequest").startswith(
        'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00"')
    # valid options reach the pod lookup
    assert status_of(client.get(log, params={"tailLines": "0", "follow": "yes", "previous": "0"}), 404, "NotFound")


def test_delete_options_body_is_type_checked(client: httpx.Client, ns: str) -> None:
    assert client.post(pods(ns), json=make_pod("a").build()).status_code == 201
    path = f"{pods(ns)}/a"
    for body, message in [
        (b'{"gracePeriodSeconds": "abc"}', "json: cannot unmarshal string into Go struct field "
                                          "DeleteOptions.gracePeriodSeconds of type int64"),
        (b'{"gracePeriodSeconds": 9223372036854775808}',
         "json: cannot unmarshal number 9223372036854775808 into Go struct field DeleteOptions.gracePeriodSeconds of "
         "type int64"),
        (b'{"preconditions": 5}', "json: cannot unmarshal number into Go struct field DeleteOptions.preconditions "
                                  "of type v1.Preconditions"),
    ]:
        resp = client.request("DELETE", path, content=body, headers={"Content-Type": "application/json"})
        assert status_of(resp, 400, "BadRequest").endswith(message)
    assert client.get(path).status_code == 200
    resp = client.request("DELETE", path, content=b'{"gracePeriodSeconds": 0}',
                          headers={"Content-Type": "application/json"})
    assert resp.status_code == 200


def test_oversize_body_is_refused_before_it_is_read_whole(client: httpx.Client, ns: str) -> None:
    """A chunked body (no Content-Length) is cut off once past the limit; a Content-Length over it at once."""
    def chunks() -> Iterator[bytes]:
        yield b'{"metadata":{"name":"big"},"data":{"a":"'
        for _ in range(64):  # 16 MiB
            yield b"x" * (256 * 1024)
        yield b'"}}'

    try:
        resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", content=chunks(),
                           headers={"Content-Type": "application/json"})
        assert status_of(resp, 413, "RequestEntityTooLarge") == "Request entity too large: limit is 3145728"
    except httpx.HTTPError:  # the server may close the connection while the client still sends: also a refusal
        pass
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/big").status_code == 404
    assert client.get("/healthz").text == "ok"


def test_python_client_sees_kubes_answers(api: Any, ns: str) -> None:
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    rc = make_rc("web", 1)
    rc["spec"]["replicas"] = 2**31
    with pytest.raises(k8s.ApiException) as caught:
        core.create_namespaced_replication_controller(ns, rc)
    assert caught.value.status == 400
    assert json.loads(caught.value.body)["message"] == RC_OVERFLOW
    with pytest.raises(k8s.ApiException) as caught:
        core.read_namespaced_pod_log("nopod", ns, tail_lines=-1)
    assert caught.value.status == 422
    assert json.loads(caught.value.body)["message"] == ('PodLogOptions "nopod" is invalid: tailLines: Invalid value: '
                                                        "-1: must be greater than or equal to 0")
    with pytest.raises(k8s.ApiException) as caught:
        core.list_namespaced_pod(ns, resource_version_match="Exact")
    assert caught.value.status == 422
    created = core.create_namespaced_replication_controller(ns, make_rc("ok", 2))
    assert created.spec.replicas == 2


def test_scale_subresource_is_range_checked(client: httpx.Client, ns: str) -> None:
    assert client.post(rcs(ns), json=make_rc("web", 1)).status_code == 201
    scale = f"{rcs(ns)}/web/scale"
    body = client.get(scale).json()
    for replicas, what in [(2**31, "number 2147483648"), (2.5, "number 2.5"), ("3", "string")]:
        body["spec"]["replicas"] = replicas
        message = status_of(client.put(scale, json=body), 400, "BadRequest")
        assert message == (f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal {what} into '
                           "Go struct field ScaleSpec.spec.replicas of type int32")
    resp = client.patch(scale, content=b'{"spec":{"replicas":4294967296}}',
                        headers={"Content-Type": "application/merge-patch+json"})
    assert "cannot unmarshal number 4294967296 into Go struct field ScaleSpec.spec.replicas" in \
        status_of(resp, 400, "BadRequest")
    assert client.get(f"{rcs(ns)}/web").json()["spec"]["replicas"] == 1


def test_eviction_and_binding_bodies_are_typed(client: httpx.Client, ns: str) -> None:
    assert client.post(pods(ns), json=make_pod("a").build()).status_code == 201
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a"},
                "deleteOptions": {"gracePeriodSeconds": 2**63}}
    message = status_of(client.post(f"{pods(ns)}/a/eviction", json=eviction), 400, "BadRequest")
    assert message.endswith("json: cannot unmarshal number 9223372036854775808 into Go struct field "
                            "DeleteOptions.deleteOptions.gracePeriodSeconds of type int64")
    eviction["deleteOptions"] = {"gracePeriodSeconds": "soon"}
    assert "cannot unmarshal string into Go struct field" in \
        status_of(client.post(f"{pods(ns)}/a/eviction", json=eviction), 400, "BadRequest")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"}, "target": {"name": 7}}
    message = status_of(client.post(f"{pods(ns)}/a/binding", json=binding), 400, "BadRequest")
    assert message.endswith("json: cannot unmarshal number into Go struct field ObjectReference.target.name of type "
                            "string")
    pod = client.get(f"{pods(ns)}/a").json()
    assert "deletionTimestamp" not in pod["metadata"] and "nodeName" not in pod["spec"]


def test_etcd_request_limit_is_a_flag() -> None:
    """``--etcd-max-request-bytes`` (etcd's ``--max-request-bytes``) decides what is refused before the write."""
    from conftest import api_only

    with api_only("--etcd-max-request-bytes", "20000") as cluster, \
            httpx.Client(base_url=cluster.api_url, timeout=30) as c:
        path = "/api/v1/namespaces/default/configmaps"
        small = {"metadata": {"name": "bounds-small"}, "data": {"a": "x" * 15_000}}
        big = {"metadata": {"name": "bounds-big"}, "data": {"a": "x" * 25_000}}
        assert c.post(path, json=small).status_code == 201
        message = status_of(c.post(path, json=big), 413, "RequestEntityTooLarge")
        assert "over etcd's request limit of 20000 bytes" in message
        assert c.get(f"{path}/bounds-big").status_code == 404
        grown = c.patch(f"{path}/bounds-small", json={"data": {"b": "y" * 10_000}},
                        headers={"Content-Type": "application/merge-patch+json"})
        assert status_of(grown, 413, "RequestEntityTooLarge")
        assert "b" not in c.get(f"{path}/bounds-small").json()["data"]
        assert c.delete(f"{path}/bounds-small").status_code == 200


def test_dry_run_values_are_validated_per_options_kind(client: httpx.Client, ns: str) -> None:
    assert client.post(rcs(ns), json=make_rc("web", 1)).status_code == 201
    cases = [
        (client.post(rcs(ns), json=make_rc("other", 1), params={"dryRun": "true"}), "CreateOptions", '"true"'),
        (client.put(f"{rcs(ns)}/web", json=make_rc("web", 2), params={"dryRun": ["All", "x"]}), "UpdateOptions",
         '"All", "x"'),
        (client.patch(f"{rcs(ns)}/web", json={}, params={"dryRun": ""},
                      headers={"Content-Type": "application/merge-patch+json"}), "PatchOptions", '""'),
        (client.delete(f"{rcs(ns)}/web", params={"dryRun": "yes"}), "DeleteOptions", '"yes"'),
    ]
    for resp, kind, values in cases:
        assert status_of(resp, 422, "Invalid") == (f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                                   f'[]string{{{values}}}: supported values: "All"')
    scaled = client.put(f"{rcs(ns)}/web/scale", params={"dryRun": "All"},
                        json={"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
                              "spec": {"replicas": 5}})
    assert scaled.status_code == 200 and scaled.json()["spec"]["replicas"] == 5
    assert client.get(f"{rcs(ns)}/web").json()["spec"]["replicas"] == 1


def test_field_validation_values_are_validated_per_options_kind(client: httpx.Client, ns: str) -> None:
    assert client.post(rcs(ns), json=make_rc("web", 1)).status_code == 201
    cases = [(client.post(rcs(ns), json=make_rc("x", 1), params={"fieldValidation": "Loose"}), "CreateOptions"),
             (client.put(f"{rcs(ns)}/web", json=make_rc("web", 1), params={"fieldValidation": "Loose"}),
              "UpdateOptions"),
             (client.patch(f"{rcs(ns)}/web", json={}, params={"fieldValidation": "Loose"},
                           headers={"Content-Type": "application/merge-patch+json"}), "PatchOptions")]
    for resp, kind in cases:
        assert status_of(resp, 422, "Invalid") == (f'{kind}.meta.k8s.io "" is invalid: fieldValidation: Unsupported '
                                                   'value: "Loose": supported values: "", "Ignore", "Strict", "Warn"')
