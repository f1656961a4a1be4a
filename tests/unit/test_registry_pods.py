"""The pod strategy: what a created pod looks like, which specs are refused and why, updates, status, table."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimachinery.errors import BadRequest, Cause
from apiserver.registry.pods import PodStrategy, pod_row, pod_status_reason
from apiserver.registry.podspec import image_pull_policy

STRATEGY = PodStrategy()


def ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.25"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": ago(hours=3)}, "spec": body}


def created(pod: dict[str, Any]) -> dict[str, Any]:
    STRATEGY.prepare_for_create(pod)
    return pod


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def invalid_create(**spec: Any) -> list[str]:
    return errors(STRATEGY.validate(created(make_pod(**spec))))


# --- defaults and admission ----------------------------------------------------------------------------------


def test_created_pod_carries_kubernetes_defaults() -> None:
    pod = created(make_pod())
    spec, container = pod["spec"], pod["spec"]["containers"][0]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds",
                                 "securityContext", "enableServiceLinks")} == {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": True}
    assert "serviceAccountName" not in spec  # the ServiceAccount admission plugin's default
    assert container == {"name": "app", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent", "resources": {},
                         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert STRATEGY.validate(pod) == []


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.25", "IfNotPresent"),
    ("localhost:5000/nginx", "Always"), ("localhost:5000/nginx:v1", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_default_tolerations_are_added_unless_already_tolerated() -> None:
    pod = created(make_pod(tolerations=[{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                         "effect": "NoExecute", "tolerationSeconds": 10}]))
    assert pod["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    tolerate_all = created(make_pod(tolerations=[{"operator": "Exists"}]))
    assert tolerate_all["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_ports_default_to_tcp_and_requests_to_limits() -> None:
    pod = created(make_pod(containers=[{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}],
                                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]))
    container = pod["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert pod["status"]["qosClass"] == "Guaranteed"


@pytest.mark.parametrize(("resources", "qos"), [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "100m"}}, "Burstable"),
    ({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}, "Burstable"),
    ({"limits": {"cpu": "0.5", "memory": "64Mi"}, "requests": {"cpu": "500m", "memory": "64Mi"}}, "Guaranteed"),
])
def test_qos_class(resources: dict[str, Any], qos: str) -> None:
    pod = created(make_pod(containers=[{"name": "app", "image": "nginx", "resources": resources}]))
    assert pod["status"]["qosClass"] == qos


def test_unparsable_quantity_is_a_decode_error() -> None:
    with pytest.raises(BadRequest) as err:
        created(make_pod(containers=[{"name": "a", "image": "b", "resources": {"limits": {"cpu": "lots"}}}]))
    assert err.value.message == ('Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                                 "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_scheduling_gates_mark_the_pod_unschedulable() -> None:
    pod = created(make_pod(schedulingGates=[{"name": "example.com/wait"}]))
    assert pod["status"]["conditions"][0]["reason"] == "SchedulingGated"
    assert pod_status_reason(pod) == "SchedulingGated"


# --- validation ------------------------------------------------------------------------------------------------


def test_containers_are_required() -> None:
    assert invalid_create(containers=[]) == ["spec.containers: Required value"]


def test_container_names_are_unique_dns_labels_and_images_required() -> None:
    assert invalid_create(containers=[{"name": "app", "image": "a"}, {"name": "app", "image": ""},
                                      {"name": "App", "image": "c"}]) == [
        "spec.containers[1].image: Required value",
        'spec.containers[1].name: Duplicate value: "app"',
        'spec.containers[2].name: Invalid value: "App": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]


def test_ports_and_protocols() -> None:
    assert invalid_create(containers=[{"name": "a", "image": "b", "ports": [
        {"containerPort": 70000}, {"containerPort": 80, "hostPort": 0, "protocol": "ICMP"},
        {"containerPort": 81, "hostPort": 8080}, {"containerPort": 82, "hostPort": 8080}]}]) == [
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        'spec.containers[0].ports[3].hostPort: Duplicate value: "TCP//8080"',
    ]


def test_restart_policy_values() -> None:
    assert invalid_create(restartPolicy="Sometimes") == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"']


def test_requests_may_not_exceed_limits() -> None:
    assert invalid_create(containers=[{"name": "a", "image": "b", "resources": {
        "requests": {"cpu": "1"}, "limits": {"cpu": "500m"}}}]) == [
        'spec.containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m']


def test_resource_names_and_signs() -> None:
    assert invalid_create(containers=[{"name": "a", "image": "b", "resources": {
        "requests": {"pods": "1", "memory": "-1"}}}]) == [
        'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for '
        "containers",
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0',
    ]


def test_toleration_rules() -> None:
    assert invalid_create(tolerations=[
        {"key": "a", "operator": "Exists", "value": "x"},
        {"key": "b", "operator": "Equal", "value": "x", "effect": "NoSchedule", "tolerationSeconds": 5},
        {"key": "c", "operator": "Equal", "effect": "Sometimes"},
    ]) == [
        "spec.tolerations[0].operator: Invalid value: \"x\": value must be empty when `operator` is 'Exists'",
        "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
        'spec.tolerations[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
    ]


def test_node_selector_labels() -> None:
    assert invalid_create(nodeSelector={"disk": "fast ssd"})[0].startswith(
        'spec.nodeSelector: Invalid value: "fast ssd": a valid label must be an empty string')


def test_node_affinity_operators() -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In"},
                                 {"key": "ssd", "operator": "Exists", "values": ["x"]},
                                 {"key": "cores", "operator": "Gt", "values": ["1", "2"]}]}
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    assert invalid_create(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}) == [
        f"{path}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        f"{path}.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'",
        f"{path}.matchExpressions[2].values: Required value: must be specified single value when `operator` is 'Lt' "
        "or 'Gt'",
    ]


def test_volume_names_unique_and_mounts_must_refer_to_volumes() -> None:
    assert invalid_create(volumes=[{"name": "data"}, {"name": "data"}],
                          containers=[{"name": "a", "image": "b",
                                       "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}]) == [
        'spec.volumes[1].name: Duplicate value: "data"',
        'spec.containers[0].volumeMounts[0].name: Not found: "cache"',
    ]


def test_whole_message_as_kubectl_prints_it() -> None:
    from apimachinery.errors import invalid

    pod = created(make_pod(containers=[{"name": "app", "image": ""}]))
    err = invalid("Pod", "web", STRATEGY.validate(pod))
    assert err.message == 'Pod "web" is invalid: spec.containers[0].image: Required value'


# --- updates ---------------------------------------------------------------------------------------------------


def stored_pod() -> dict[str, Any]:
    pod = created(make_pod(containers=[{"name": "app", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]))
    pod["metadata"]["resourceVersion"] = "5"
    return pod


def test_image_and_added_toleration_updates_are_allowed() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:1.26"
    new["spec"]["tolerations"].append({"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"})
    new["spec"]["activeDeadlineSeconds"] = 60
    STRATEGY.prepare_for_update(new, old)
    assert STRATEGY.validate_update(new, old) == []
    assert STRATEGY.spec_changed(new, old)


def test_other_spec_changes_are_forbidden() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["ports"][0]["containerPort"] = 8080
    STRATEGY.prepare_for_update(new, old)
    causes = STRATEGY.validate_update(new, old)
    assert [c.field for c in causes] == ["spec"]
    assert causes[0].message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")
    assert "containers[0].ports[0].containerPort: 80" in causes[0].message
    assert "containers[0].ports[0].containerPort: 8080" in causes[0].message


def test_tolerations_may_not_be_removed_and_containers_not_added() -> None:
    old = stored_pod()
    fewer = copy.deepcopy(old)
    fewer["spec"]["tolerations"] = []
    assert errors(STRATEGY.validate_update(fewer, old)) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]
    more = copy.deepcopy(old)
    more["spec"]["containers"].append({"name": "b", "image": "busybox"})
    STRATEGY.prepare_for_update(more, old)
    assert errors(STRATEGY.validate_update(more, old)) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"]


def test_update_keeps_status() -> None:
    old = stored_pod()
    old["status"]["phase"] = "Running"
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Failed"}
    STRATEGY.prepare_for_update(new, old)
    assert new["status"]["phase"] == "Running"


# --- ephemeral containers ----------------------------------------------------------------------------------------


def add_ephemeral(old: dict[str, Any], *containers: dict[str, Any]) -> dict[str, Any]:
    """What ``pods/{name}/ephemeralcontainers`` stores for a body that lists ``containers`` (or 422's causes)."""
    new = copy.deepcopy(old)
    new["spec"]["ephemeralContainers"] = [copy.deepcopy(c) for c in containers]
    STRATEGY.prepare_for_ephemeralcontainers_update(new, old)
    return new


DEBUGGER = {"name": "debugger", "image": "busybox", "command": ["sh"], "stdin": True, "tty": True, "resources": {}}


def test_ephemeral_containers_are_added_defaulted_and_only_they_change() -> None:
    old = stored_pod()
    body = copy.deepcopy(old)
    body["spec"]["ephemeralContainers"] = [DEBUGGER]
    body["spec"]["containers"][0]["image"] = "nginx:9"
    body["metadata"]["labels"] = {"sneaky": "yes"}
    body["status"] = {"phase": "Failed"}
    STRATEGY.prepare_for_ephemeralcontainers_update(body, old)
    assert STRATEGY.validate_ephemeralcontainers_update(body, old) == []
    assert body["spec"]["ephemeralContainers"] == [{**DEBUGGER, "imagePullPolicy": "Always",
                                                    "terminationMessagePath": "/dev/termination-log",
                                                    "terminationMessagePolicy": "File"}]
    assert list(body["spec"]).index("ephemeralContainers") == list(body["spec"]).index("containers") + 1
    assert body["spec"]["containers"] == old["spec"]["containers"]
    assert body["metadata"].get("labels") == old["metadata"].get("labels") and body["status"] == old["status"]


def test_existing_ephemeral_containers_may_not_change_or_go() -> None:
    old = add_ephemeral(stored_pod(), DEBUGGER, {**DEBUGGER, "name": "second"})
    changed = add_ephemeral(old, {**DEBUGGER, "image": "alpine"}, {**DEBUGGER, "name": "second"})
    causes = STRATEGY.validate_ephemeralcontainers_update(changed, old)
    assert [(c.type, c.field) for c in causes] == [("FieldValueForbidden", "spec.ephemeralContainers")]
    assert causes[0].message.startswith('Forbidden: existing ephemeral containers "debugger" may not be changed\n')
    assert '- \timage: "busybox"' in causes[0].message and '+ \timage: "alpine"' in causes[0].message
    removed = add_ephemeral(old, {**DEBUGGER, "name": "second"})
    assert errors(STRATEGY.validate_ephemeralcontainers_update(removed, old)) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed\n']
    reordered = add_ephemeral(old, {**DEBUGGER, "name": "second"}, DEBUGGER, {**DEBUGGER, "name": "third"})
    assert STRATEGY.validate_ephemeralcontainers_update(reordered, old) == []


def test_ephemeral_container_rules() -> None:
    """``validateEphemeralContainers``: unique names across all containers, a real target, no workload fields."""
    old = stored_pod()
    bad = add_ephemeral(old, {**DEBUGGER, "name": "app", "targetContainerName": "nope",
                              "ports": [{"containerPort": 80}], "resources": {"limits": {"cpu": "1"}},
                              "readinessProbe": {"exec": {"command": ["true"]}},
                              "lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
                              "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}]},
                        {**DEBUGGER, "name": "debugger", "targetContainerName": "app"},
                        {**DEBUGGER, "name": "debugger"})
    assert errors(STRATEGY.validate_ephemeralcontainers_update(bad, old)) == [
        'spec.ephemeralContainers[0].volumeMounts[0].name: Not found: "v"',
        'spec.ephemeralContainers[0].name: Duplicate value: "app"',
        'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"',
        "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
        'spec.ephemeralContainers[2].name: Duplicate value: "debugger"',
    ]


def test_ephemeral_containers_only_through_their_subresource() -> None:
    assert "spec.ephemeralContainers: Forbidden: cannot be set on create" in invalid_create(
        ephemeralContainers=[DEBUGGER])
    old = add_ephemeral(stored_pod(), DEBUGGER)
    for containers in ([], [DEBUGGER, {**DEBUGGER, "name": "more"}]):
        new = copy.deepcopy(old)
        new["spec"]["ephemeralContainers"] = containers
        STRATEGY.prepare_for_update(new, old)
        assert [c.field for c in STRATEGY.validate_update(new, old)] == ["spec"]
    mirror = copy.deepcopy(old)
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    assert errors(STRATEGY.validate_ephemeralcontainers_update(add_ephemeral(mirror, DEBUGGER), mirror)) == [
        ": Forbidden: static pods do not support ephemeral containers"]


def test_a_finished_ephemeral_container_is_never_reported_running_again() -> None:
    old = add_ephemeral(stored_pod(), DEBUGGER)
    done = {"name": "debugger", "state": {"terminated": {"exitCode": 0}}}
    old["status"]["ephemeralContainerStatuses"] = [done]
    new = copy.deepcopy(old)
    new["status"]["ephemeralContainerStatuses"] = [{**done, "state": {"running": {}}}]
    assert errors(STRATEGY.validate_status_update(new, old)) == [
        "status.ephemeralContainerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"]


# --- status ----------------------------------------------------------------------------------------------------


def test_status_update_keeps_spec_and_qos() -> None:
    old = stored_pod()
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "elsewhere"
    new["status"] = {"phase": "Running", "podIP": "10.244.0.5"}
    STRATEGY.prepare_for_status_update(new, old)
    assert new["spec"] == old["spec"]
    assert new["status"] == {"phase": "Running", "podIP": "10.244.0.5", "qosClass": "BestEffort"}
    assert STRATEGY.validate_status_update(new, old) == []


def test_status_update_rules() -> None:
    old = stored_pod()
    old["spec"]["restartPolicy"] = "Never"
    old["status"]["containerStatuses"] = [{"name": "app", "state": {"terminated": {"exitCode": 0}}}]
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Runing", "qosClass": "Guaranteed", "podIPs": [{"ip": "nope"}],
                     "containerStatuses": [{"name": "app", "state": {"running": {}}}]}
    assert errors(STRATEGY.validate_status_update(new, old)) == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable',
        'status.phase: Unsupported value: "Runing": supported values: "Pending", "Running", "Succeeded", "Failed", '
        '"Unknown"',
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
        'status.podIPs[0]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]


# --- deletion --------------------------------------------------------------------------------------------------


def test_graceful_delete_seconds() -> None:
    pod = stored_pod()
    assert STRATEGY.graceful_delete_seconds(pod, None) == 0  # never scheduled
    pod["spec"]["nodeName"] = "n1"
    assert STRATEGY.graceful_delete_seconds(pod, None) == 30
    assert STRATEGY.graceful_delete_seconds(pod, 5) == 5
    assert STRATEGY.graceful_delete_seconds(pod, -3) == 1
    pod["status"]["phase"] = "Succeeded"
    assert STRATEGY.graceful_delete_seconds(pod, 10) == 0


# --- fields ----------------------------------------------------------------------------------------------------


def test_selectable_fields() -> None:
    pod = stored_pod()
    pod["spec"].update(nodeName="n1", serviceAccountName="default")
    pod["status"].update(phase="Running", podIPs=[{"ip": "10.244.1.2"}])
    assert STRATEGY.selectable_fields(pod) == {
        "metadata.name": "web", "metadata.namespace": "default", "spec.nodeName": "n1",
        "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "default", "spec.hostNetwork": "false", "status.phase": "Running",
        "status.podIP": "10.244.1.2", "status.nominatedNodeName": ""}


# --- table -----------------------------------------------------------------------------------------------------


def running(name: str = "app", **extra: Any) -> dict[str, Any]:
    return {"name": name, "ready": True, "restartCount": 0, "state": {"running": {"startedAt": ago(hours=3)}},
            **extra}


def with_status(status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    pod = make_pod(**spec)
    pod["status"] = status
    return pod


def test_columns_are_kubectls() -> None:
    assert [(c.name, c.priority) for c in STRATEGY.columns()] == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
        ("Nominated Node", 1), ("Readiness Gates", 1)]


def test_running_pod_row() -> None:
    pod = with_status({"phase": "Running", "podIPs": [{"ip": "10.244.0.7"}], "containerStatuses": [running()],
                       "conditions": [{"type": "Ready", "status": "True"}]}, nodeName="node-1")
    assert STRATEGY.row(pod) == ["web", "1/1", "Running", "0", "3h", "10.244.0.7", "node-1", "<none>", "<none>"]


def test_pending_pod_row() -> None:
    assert STRATEGY.row(with_status({"phase": "Pending"})) == ["web", "0/1", "Pending", "0", "3h", "<none>", "<none>",
                                                              "<none>", "<none>"]


@pytest.mark.parametrize(("state", "reason"), [
    ({"waiting": {"reason": "ContainerCreating"}}, "ContainerCreating"),
    ({"waiting": {"reason": "ErrImagePull"}}, "ErrImagePull"),
    ({"waiting": {"reason": "ImagePullBackOff"}}, "ImagePullBackOff"),
    ({"waiting": {"reason": "CrashLoopBackOff"}}, "CrashLoopBackOff"),
    ({"terminated": {"reason": "Completed", "exitCode": 0}}, "Completed"),
    ({"terminated": {"reason": "Error", "exitCode": 1}}, "Error"),
    ({"terminated": {"exitCode": 137, "signal": 9}}, "Signal:9"),
    ({"terminated": {"exitCode": 3}}, "ExitCode:3"),
])
def test_container_state_decides_status(state: dict[str, Any], reason: str) -> None:
    pod = with_status({"phase": "Running", "containerStatuses": [{"name": "app", "ready": False, "state": state}]})
    assert pod_status_reason(pod) == reason


def test_completed_with_a_container_still_running() -> None:
    pod = with_status({"phase": "Running", "containerStatuses": [
        running("a"), {"name": "b", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]},
        containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    assert pod_status_reason(pod) == "NotReady"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert pod_status_reason(pod) == "Running"


def test_init_containers() -> None:
    spec = {"initContainers": [{"name": "init-db", "image": "busybox"}, {"name": "init-cache", "image": "busybox"}]}
    waiting = with_status({"phase": "Pending", "initContainerStatuses": [
        {"name": "init-db", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "init-cache", "state": {"running": {}}}]}, **spec)
    assert pod_status_reason(waiting) == "Init:1/2"
    crashing = with_status({"phase": "Pending", "initContainerStatuses": [
        {"name": "init-db", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, **spec)
    assert pod_status_reason(crashing) == "Init:CrashLoopBackOff"
    failed = with_status({"phase": "Pending", "initContainerStatuses": [
        {"name": "init-db", "state": {"terminated": {"exitCode": 2}}}]}, **spec)
    assert pod_status_reason(failed) == "Init:ExitCode:2"


def test_terminating_and_node_lost() -> None:
    pod = with_status({"phase": "Running", "containerStatuses": [running()]})
    pod["metadata"]["deletionTimestamp"] = ago(seconds=5)
    assert pod_status_reason(pod) == "Terminating"
    pod["status"]["reason"] = "NodeLost"
    assert pod_status_reason(pod) == "Unknown"
    finished = with_status({"phase": "Succeeded"})
    finished["metadata"]["deletionTimestamp"] = ago(seconds=5)
    assert pod_status_reason(finished) == "Succeeded"


def test_status_reason_overrides_phase() -> None:
    assert pod_status_reason(with_status({"phase": "Failed", "reason": "Evicted"})) == "Evicted"


def test_restarts_show_when_the_last_one_happened() -> None:
    pod = with_status({"phase": "Running", "containerStatuses": [
        running(restartCount=3, lastState={"terminated": {"exitCode": 1, "finishedAt": ago(hours=3)}})]})
    assert pod_row(pod)[3] == "3 (3h ago)"


def test_readiness_gates_cell() -> None:
    pod = with_status({"phase": "Running", "conditions": [{"type": "example.com/lb", "status": "True"}]},
                      readinessGates=[{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}])
    assert pod_row(pod)[-1] == "1/2"


# --- host paths and sub paths (validateHostPathVolumeSource, validateLocalDescendingPath) ----------------------


@pytest.mark.parametrize("path", ["../../etc", "/var/../etc", "/a/..", ".."])
def test_host_path_with_a_backstep_is_invalid(path: str) -> None:
    volumes = [{"name": "h", "hostPath": {"path": path}}]
    assert invalid_create(volumes=volumes) == [
        f"spec.volumes[0].hostPath.path: Invalid value: \"{path}\": must not contain '..'"]


@pytest.mark.parametrize("path", ["/var/log", "/a..b/c", "/..hidden", "relative/dir"])
def test_host_path_without_a_backstep_is_valid(path: str) -> None:
    assert invalid_create(volumes=[{"name": "h", "hostPath": {"path": path, "type": "DirectoryOrCreate"}}]) == []


def test_host_path_type_must_be_known() -> None:
    assert invalid_create(volumes=[{"name": "h", "hostPath": {"path": "/x", "type": "Folder"}}]) == [
        'spec.volumes[0].hostPath.type: Unsupported value: "Folder": supported values: "", "BlockDevice", '
        '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"']


def test_sub_path_errors_name_the_mount() -> None:
    containers = [{"name": "app", "image": "nginx", "volumeMounts": [
        {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b", "subPath": "/abs/../x"}]}]
    assert invalid_create(containers=containers, volumes=[{"name": "v", "emptyDir": {}}]) == [
        'spec.containers[0].volumeMounts[1].subPath: Invalid value: "/abs/../x": must be a relative path',
        "spec.containers[0].volumeMounts[1].subPath: Invalid value: \"/abs/../x\": must not contain '..'"]


def test_security_context_ids_must_be_non_negative_int32() -> None:
    containers = [{"name": "app", "image": "nginx", "securityContext": {"runAsUser": -1, "runAsGroup": 2**31}}]
    context = {"runAsUser": -2, "runAsGroup": 0, "fsGroup": -3, "supplementalGroups": [1, -4]}
    assert invalid_create(containers=containers, securityContext=context) == [
        "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        "spec.containers[0].securityContext.runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, "
        "inclusive",
        "spec.securityContext.fsGroup: Invalid value: -3: must be between 0 and 2147483647, inclusive",
        "spec.securityContext.runAsUser: Invalid value: -2: must be between 0 and 2147483647, inclusive",
        "spec.securityContext.supplementalGroups[1]: Invalid value: -4: must be between 0 and 2147483647, inclusive"]


def test_projected_file_modes_and_item_paths() -> None:
    volumes = [
        {"name": "s", "secret": {"secretName": "s", "defaultMode": -1,
                                 "items": [{"key": "", "path": "../x", "mode": 0o1000}]}},
        {"name": "c", "configMap": {"name": "c", "defaultMode": 0o777, "items": [{"key": "k", "path": "a/b"}]}},
        {"name": "d", "downwardAPI": {"items": [{"path": "/abs", "mode": -2,
                                                 "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "p", "projected": {"defaultMode": 512, "sources": [
            {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}},
            {"configMap": {"name": "c", "items": [{"key": "k", "path": "..data"}]}}]}},
    ]
    assert invalid_create(volumes=volumes) == [
        "spec.volumes[0].secret.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both "
        "inclusive",
        "spec.volumes[0].secret.items[0].key: Required value",
        "spec.volumes[0].secret.items[0].path: Invalid value: \"../x\": must not contain '..'",
        "spec.volumes[0].secret.items[0].path: Invalid value: \"../x\": must not start with '..'",
        "spec.volumes[0].secret.items[0].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both "
        "inclusive",
        'spec.volumes[2].downwardAPI.items[0].path: Invalid value: "/abs": must be a relative path',
        "spec.volumes[2].downwardAPI.items[0].mode: Invalid value: -2: must be a number between 0 and 0777 (octal), "
        "both inclusive",
        "spec.volumes[3].projected.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), "
        "both inclusive",
        "spec.volumes[3].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not "
        "specify a duration less than 10 minutes",
        "spec.volumes[3].projected.sources[1].configMap.items[0].path: Invalid value: \"..data\": must not start "
        "with '..'"]
