"""`kubelab trace`'s step builder on a recorded flow: what each of the 13 steps reports, from which record, and
what it says when a record is missing, does not apply, or the history was compacted.

RECORDED is the evidence `gather` read from the real apiserver for the scenario in
tests/integration/test_trace.py (RC `web` applied with kubectl; pod created, bound and reported Running as the
controller, scheduler and kubelet do), trimmed to the fields the trace reads, renamed to the walkthrough's
names, with timestamps set a few seconds apart so each latency is distinct.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest

from kubelab.commands import tracesvg
from kubelab.commands.trace import Evidence, Version, build_steps, critical_path, gather, latency_text, render, to_json
from kubelab.commands.traceaudit import Write

UID = "77418bdd-6f82-4440-8e3c-d464314df517"
RECORDED: dict[str, Any] = {'pod': {'apiVersion': 'v1',
         'kind': 'Pod',
         'metadata': {'name': 'web-7x2kq',
                      'namespace': 'default',
                      'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                      'resourceVersion': '22',
                      'creationTimestamp': '2026-12-02T10:00:01Z',
                      'ownerReferences': [{'apiVersion': 'v1',
                                           'kind': 'ReplicationController',
                                           'name': 'web',
                                           'uid': '781cae61-137f-4a76-986a-314b807373e4',
                                           'controller': True,
                                           'blockOwnerDeletion': True}],
                      'labels': {'app': 'web'}},
         'spec': {'nodeName': 'node02', 'containers': [{'name': 'main', 'image': 'busybox'}]},
         'status': {'phase': 'Running',
                    'conditions': [{'type': 'PodScheduled',
                                    'status': 'True',
                                    'lastTransitionTime': '2026-12-02T10:00:01Z'},
                                   {'type': 'Initialized',
                                    'status': 'True',
                                    'lastTransitionTime': '2026-12-02T10:00:02Z'},
                                   {'type': 'ContainersReady',
                                    'status': 'True',
                                    'lastTransitionTime': '2026-12-02T10:00:06Z'},
                                   {'type': 'Ready',
                                    'status': 'True',
                                    'lastTransitionTime': '2026-12-02T10:00:06Z'}],
                    'startTime': '2026-12-02T10:00:02Z',
                    'containerStatuses': [{'name': 'main',
                                           'image': 'busybox',
                                           'imageID': '',
                                           'ready': True,
                                           'restartCount': 0,
                                           'started': True,
                                           'state': {'running': {'startedAt': '2026-12-02T10:00:05Z'}}}]}},
 'controllers': [{'apiVersion': 'v1',
                  'kind': 'ReplicationController',
                  'metadata': {'name': 'web',
                               'namespace': 'default',
                               'uid': '781cae61-137f-4a76-986a-314b807373e4',
                               'resourceVersion': '12',
                               'creationTimestamp': '2026-12-02T10:00:00Z',
                               'labels': {'app': 'web'},
                               'annotations': {'kubectl.kubernetes.io/last-applied-configuration': '{...}'}},
                  'spec': {'replicas': 1}}],
 'pod_events': [{'involvedObject': {'kind': 'Pod',
                                    'name': 'web-7x2kq',
                                    'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                                    'resourceVersion': '13'},
                 'reason': 'Scheduled',
                 'message': 'Successfully assigned default/web-7x2kq to node02',
                 'type': 'Normal',
                 'source': {'component': 'default-scheduler'},
                 'eventTime': '2026-12-02T10:00:01.250000Z',
                 'action': 'Binding',
                 'metadata': {'name': 'web-7x2kq.18ed812957cfc71c', 'resourceVersion': '16'}},
                {'involvedObject': {'kind': 'Pod',
                                    'name': 'web-7x2kq',
                                    'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                                    'resourceVersion': '15',
                                    'fieldPath': 'spec.containers{main}'},
                 'reason': 'Pulling',
                 'message': 'Pulling image "busybox"',
                 'type': 'Normal',
                 'source': {'component': 'kubelet', 'host': 'node02'},
                 'firstTimestamp': '2026-12-02T10:00:02Z',
                 'metadata': {'name': 'web-7x2kq.18ed8129583b8f88', 'resourceVersion': '18'}},
                {'involvedObject': {'kind': 'Pod',
                                    'name': 'web-7x2kq',
                                    'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                                    'resourceVersion': '15',
                                    'fieldPath': 'spec.containers{main}'},
                 'reason': 'Pulled',
                 'message': 'Successfully pulled image "busybox" in 2.9s (2.9s including waiting)',
                 'type': 'Normal',
                 'source': {'component': 'kubelet', 'host': 'node02'},
                 'firstTimestamp': '2026-12-02T10:00:05Z',
                 'metadata': {'name': 'web-7x2kq.18ed8129585e54da', 'resourceVersion': '19'}},
                {'involvedObject': {'kind': 'Pod',
                                    'name': 'web-7x2kq',
                                    'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                                    'resourceVersion': '15',
                                    'fieldPath': 'spec.containers{main}'},
                 'reason': 'Created',
                 'message': 'Created container main',
                 'type': 'Normal',
                 'source': {'component': 'kubelet', 'host': 'node02'},
                 'firstTimestamp': '2026-12-02T10:00:05Z',
                 'metadata': {'name': 'web-7x2kq.18ed812958838c50', 'resourceVersion': '20'}},
                {'involvedObject': {'kind': 'Pod',
                                    'name': 'web-7x2kq',
                                    'uid': '77418bdd-6f82-4440-8e3c-d464314df517',
                                    'resourceVersion': '15',
                                    'fieldPath': 'spec.containers{main}'},
                 'reason': 'Started',
                 'message': 'Started container main',
                 'type': 'Normal',
                 'source': {'component': 'kubelet', 'host': 'node02'},
                 'firstTimestamp': '2026-12-02T10:00:05Z',
                 'metadata': {'name': 'web-7x2kq.18ed812958a726a9', 'resourceVersion': '21'}}],
 'owner_events': [{'involvedObject': {'kind': 'ReplicationController',
                                      'name': 'web',
                                      'uid': '781cae61-137f-4a76-986a-314b807373e4',
                                      'resourceVersion': '12'},
                   'reason': 'SuccessfulCreate',
                   'message': 'Created pod: web-7x2kq',
                   'type': 'Normal',
                   'source': {'component': 'replication-controller'},
                   'firstTimestamp': '2026-12-02T10:00:01Z',
                   'metadata': {'name': 'web.18ed8129575d6079', 'resourceVersion': '14'}}],
 'pod_history': [{'type': 'ADDED',
                  'rv': 13,
                  'obj': {'metadata': {'uid': '77418bdd-6f82-4440-8e3c-d464314df517', 'resourceVersion': '13'},
                          'spec': {},
                          'status': {'phase': 'Pending'}}},
                 {'type': 'MODIFIED',
                  'rv': 15,
                  'obj': {'metadata': {'uid': '77418bdd-6f82-4440-8e3c-d464314df517', 'resourceVersion': '15'},
                          'spec': {'nodeName': 'node02'},
                          'status': {'phase': 'Pending',
                                     'conditions': [{'type': 'PodScheduled',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:01Z'}]}}},
                 {'type': 'MODIFIED',
                  'rv': 17,
                  'obj': {'metadata': {'uid': '77418bdd-6f82-4440-8e3c-d464314df517', 'resourceVersion': '17'},
                          'spec': {'nodeName': 'node02'},
                          'status': {'phase': 'Pending',
                                     'conditions': [{'type': 'PodScheduled',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:01Z'},
                                                    {'type': 'Initialized',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:02Z'}],
                                     'startTime': '2026-12-02T10:00:02Z'}}},
                 {'type': 'MODIFIED',
                  'rv': 22,
                  'obj': {'metadata': {'uid': '77418bdd-6f82-4440-8e3c-d464314df517', 'resourceVersion': '22'},
                          'spec': {'nodeName': 'node02'},
                          'status': {'phase': 'Running',
                                     'conditions': [{'type': 'PodScheduled',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:01Z'},
                                                    {'type': 'Initialized',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:02Z'},
                                                    {'type': 'ContainersReady',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:06Z'},
                                                    {'type': 'Ready',
                                                     'status': 'True',
                                                     'lastTransitionTime': '2026-12-02T10:00:06Z'}],
                                     'startTime': '2026-12-02T10:00:02Z',
                                     'containerStatuses': [{'name': 'main',
                                                            'image': 'busybox',
                                                            'imageID': '',
                                                            'ready': True,
                                                            'restartCount': 0,
                                                            'started': True,
                                                            'state': {'running': {
                                                                'startedAt': '2026-12-02T10:00:05Z'}}}]}}}],
 'root_history': [{'type': 'ADDED',
                   'rv': 12,
                   'obj': {'metadata': {'uid': '781cae61-137f-4a76-986a-314b807373e4', 'resourceVersion': '12'}}}],
 'node': {'apiVersion': 'v1',
          'kind': 'Node',
          'metadata': {'name': 'node02', 'creationTimestamp': '2026-12-02T09:59:57Z'},
          'status': {'conditions': [{'type': 'Ready',
                                     'status': 'True',
                                     'reason': 'KubeletReady',
                                     'lastHeartbeatTime': '2026-12-02T09:59:58Z',
                                     'lastTransitionTime': '2026-12-02T09:59:58Z'}]}}}


def evidence(doc: dict[str, Any] | None = None) -> Evidence:
    doc = copy.deepcopy(doc or RECORDED)

    def versions(items: list[dict[str, Any]] | None) -> list[Version] | None:
        return None if items is None else [Version(**v) for v in items]

    return Evidence(pod=doc["pod"], controllers=doc["controllers"], pod_events=doc["pod_events"],
                    owner_events=doc["owner_events"], pod_history=versions(doc["pod_history"]),
                    root_history=versions(doc["root_history"]), node=doc["node"], leases=doc.get("leases", {}))


def by_number(ev: Evidence) -> dict[str, Any]:
    return {s.number: s for s in build_steps(ev)}


def test_the_steps_come_in_the_seeds_order() -> None:
    numbers = [s.number for s in build_steps(evidence())]
    assert numbers == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "12a", "12b", "12c", "12d",
                       "13"]


def test_each_step_has_the_revision_the_components_recorded() -> None:
    steps = by_number(evidence())
    assert steps["3"].revision == 12 and steps["4"].revision == 12  # the RC's creation, from etcd's history
    assert steps["5"].revision == 12  # the RC version the replication controller acted on
    assert steps["7"].revision == 13  # the pod's creation
    assert steps["8"].revision == 13  # the version the scheduler scheduled
    assert steps["10"].revision == 15  # the first version with spec.nodeName
    assert steps["11"].revision == 15  # the version the kubelet acted on
    assert steps["13"].revision == 22  # the first version with phase Running
    assert [steps[n].revision for n in ("1", "2", "6", "9", "12a")] == [None] * 5


def test_each_step_has_its_time_and_says_where_it_came_from() -> None:
    steps = by_number(evidence())
    assert steps["3"].stamp.source == "metadata.creationTimestamp"
    assert steps["6"].stamp.source == "event SuccessfulCreate firstTimestamp"
    assert steps["9"].stamp.source == "event Scheduled eventTime" and steps["9"].stamp.precise
    assert steps["10"].stamp.source == "PodScheduled lastTransitionTime"
    assert steps["11"].stamp.source == "status.startTime"
    assert steps["12d"].stamp.source == "spec.containers{main} state.startedAt"
    assert steps["13"].stamp.source == "Ready lastTransitionTime"
    assert steps["9"].actor == "default-scheduler" and steps["9"].what == "bind the pod to node02"
    assert steps["12b"].actor == "kubelet (node02)"
    assert steps["6"].evidence == "event SuccessfulCreate: Created pod: web-7x2kq"
    assert "kubectl apply" in steps["2"].evidence


def test_latencies_compare_whole_seconds_when_a_timestamp_has_only_seconds() -> None:
    steps = by_number(evidence())
    latencies = {n: s.latency for n, s in steps.items() if s.stamp}
    # 3 at :00; 6, 7 at :01; 9 at :01.25 (µs, but its neighbours have whole seconds); 10 :01; 11 :02;
    # 12a :02; 12b-d :05; 13 :06.
    assert latencies == {"3": None, "6": 1.0, "7": 0.0, "9": 0.0, "10": 0.0, "11": 1.0, "12a": 0.0, "12b": 3.0,
                         "12c": 0.0, "12d": 0.0, "13": 1.0}
    assert not any(s.latency_precise for s in steps.values())


def test_latency_between_two_microsecond_times_is_exact() -> None:
    doc = copy.deepcopy(RECORDED)
    for event in doc["pod_events"]:
        if event["reason"] in ("Pulling", "Pulled"):
            event["eventTime"] = {"Pulling": "2026-12-02T10:00:02.100000Z",
                                  "Pulled": "2026-12-02T10:00:04.600000Z"}[event["reason"]]
    steps = by_number(evidence(doc))
    assert steps["12b"].latency == pytest.approx(2.5) and steps["12b"].latency_precise
    assert not steps["12a"].latency_precise  # after startTime, which has whole seconds


def test_step_one_reports_leases_and_the_node() -> None:
    steps = by_number(evidence())
    assert "kubelet: node node02 Ready=True since 2026-12-02T09:59:58Z" in steps["1"].evidence
    assert "scheduler: not observed (no lease kube-system/kube-scheduler)" in steps["1"].evidence
    doc = copy.deepcopy(RECORDED)
    doc["leases"] = {"kube-scheduler": {"spec": {"holderIdentity": "sched-1", "renewTime": "2026-12-02T10:00:00Z"}}}
    assert "scheduler: leader sched-1 (lease kube-system/kube-scheduler" in by_number(evidence(doc))["1"].evidence


def test_without_etcd_history_revisions_are_not_observed_but_times_remain() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["pod_history"] = doc["root_history"] = None
    steps = by_number(evidence(doc))
    assert [steps[n].revision for n in ("3", "4", "7", "10", "13")] == [None] * 5
    assert not steps["4"].observed
    assert "etcd's history was not available" in steps["7"].evidence
    assert steps["13"].observed and steps["13"].evidence.startswith("current status (no history)")
    assert steps["5"].revision == 12 and steps["8"].revision == 13  # from the events: still there


def test_a_pod_whose_create_event_was_combined_or_dropped_is_not_recorded_not_mistimed() -> None:
    """client-go's EventCorrelator: past 10 similar events the RC's one "(combined from similar events)" event names
    only the latest pod, with the first one's firstTimestamp; it must not time this pod's create, and a pod with
    no event of its own (combined or dropped) gets a "not recorded" step that says why."""
    doc = copy.deepcopy(RECORDED)
    (own,) = doc["owner_events"]
    combined = copy.deepcopy(own)
    combined.update(message="(combined from similar events): Created pod: web-7x2kq", count=16,
                    firstTimestamp="2026-12-02T09:59:00Z", lastTimestamp="2026-12-02T10:00:01Z")
    others = [{**copy.deepcopy(own), "message": f"Created pod: web-{i}"} for i in range(9)]
    for owner_events in ([*others, combined], others):
        doc["owner_events"] = owner_events
        steps = by_number(evidence(doc))
        for n in ("5", "6"):
            assert not steps[n].observed and steps[n].stamp is None
            assert steps[n].evidence.startswith("event not recorded: the controller's event recorder combined")
        assert ("16 create(s) counted in the combined event" in steps["6"].evidence) == (combined in owner_events)
        assert steps["7"].observed and steps["7"].revision == 13
        ev = evidence(doc)
        assert "event not recorded: the controller's event recorder" in render(ev, build_steps(ev))
    doc["owner_events"] = []
    assert by_number(evidence(doc))["6"].evidence == "no SuccessfulCreate event for this pod"


def test_a_pod_without_controller_skips_the_controller_steps() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["controllers"], doc["owner_events"], doc["root_history"] = [], [], None
    del doc["pod"]["metadata"]["ownerReferences"]
    steps = by_number(evidence(doc))
    assert steps["2"].what == "create Pod/web-7x2kq" and steps["3"].revision == 13
    assert [(steps[n].applicable, steps[n].observed) for n in ("5", "6", "7")] == [(False, False)] * 3


def test_node_name_set_by_the_client_bypasses_the_scheduler() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["pod_history"][0]["obj"]["spec"]["nodeName"] = "node02"
    doc["pod_events"] = [e for e in doc["pod_events"] if e["reason"] != "Scheduled"]
    steps = by_number(evidence(doc))
    assert not steps["8"].applicable and not steps["9"].applicable
    assert "the scheduler is bypassed" in steps["9"].evidence
    assert steps["10"].revision == 13


def test_an_unschedulable_pod_shows_the_scheduler_s_reason() -> None:
    doc = copy.deepcopy(RECORDED)
    pod = doc["pod"]
    del pod["spec"]["nodeName"]
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                         "reason": "Unschedulable",
                                                         "lastTransitionTime": "2026-12-02T10:00:01Z"}]}
    doc["pod_history"] = doc["pod_history"][:1]
    failed = {"involvedObject": {"kind": "Pod", "name": "web-7x2kq", "uid": UID, "resourceVersion": "13"},
              "reason": "FailedScheduling", "count": 3, "type": "Warning", "source": {"component": "default-scheduler"},
              "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
              "firstTimestamp": "2026-12-02T10:00:01Z", "metadata": {"name": "x", "resourceVersion": "16"}}
    doc["pod_events"], doc["node"] = [failed], None
    steps = by_number(evidence(doc))
    assert steps["8"].observed and steps["8"].revision == 13
    assert "3 FailedScheduling attempt(s), last: 0/3 nodes are available" in steps["9"].evidence
    assert not steps["9"].observed
    assert steps["10"].evidence == "PodScheduled=False (Unschedulable)"
    assert not any(steps[n].observed for n in ("11", "12", "12a", "13"))
    assert "kubelet: not observed (no node yet)" in steps["1"].evidence


def test_an_image_already_on_the_node_is_not_pulled() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["pod_events"] = [e for e in doc["pod_events"] if e["reason"] != "Pulling"]
    pulled = next(e for e in doc["pod_events"] if e["reason"] == "Pulled")
    pulled["message"] = 'Container image "busybox" already present on machine'
    steps = by_number(evidence(doc))
    assert not steps["12a"].applicable and steps["12a"].evidence == "image already present on the node: no pull"
    assert steps["12b"].observed


def test_containers_get_sub_steps_in_spec_order_init_containers_first() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["pod"]["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    doc["pod"]["spec"]["containers"].append({"name": "side", "image": "nginx"})
    steps = build_steps(evidence(doc))
    whats = [s.what for s in steps if s.number.startswith("12") and s.number != "12"]
    assert whats[0] == "pull image busybox" and whats[3] == "start container setup"
    assert whats[8] == "pull image nginx" and whats[11] == "start container side"
    assert [s.number for s in steps if s.number.startswith("12")][-1] == "12l"


def test_a_deployment_s_pod_starts_from_the_deployment() -> None:
    doc = copy.deepcopy(RECORDED)
    rs = doc["controllers"][0]
    rs.update(apiVersion="apps/v1", kind="ReplicaSet")
    rs["metadata"]["name"] = "web-5d4f8"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "uid": "d-1", "resourceVersion": "10",
                               "creationTimestamp": "2026-12-02T09:59:59Z"}}
    doc["controllers"].append(deployment)
    doc["root_history"] = [{"type": "ADDED", "rv": 10, "obj": deployment}]
    doc["owner_events"][0]["source"]["component"] = "replicaset-controller"
    steps = by_number(evidence(doc))
    assert steps["2"].what == "create Deployment/web" and steps["3"].revision == 10
    assert steps["5"].what == "see ReplicaSet/web-5d4f8 (too few replicas)"
    assert steps["6"].actor == "replicaset-controller"
    assert "kubectl create or an API call" in steps["2"].evidence


def test_render_shows_a_row_per_step_with_its_evidence() -> None:
    ev = evidence()
    text = render(ev, build_steps(ev))
    lines = text.splitlines()
    assert lines[0].startswith(f"pod default/web-7x2kq  uid {UID}  node node02  phase Running")
    assert "controlled by: ReplicationController/web" in text
    header = next(i for i, line in enumerate(lines) if line.startswith("STEP"))
    assert lines[header].split() == ["STEP", "WHO", "WHAT", "TIME", "REV", "LATENCY"]
    row9 = next(line for line in lines if line.startswith("9 "))
    assert row9.split()[-3:] == ["10:00:01.250000", "-", "~+0s"]
    row7 = next(line for line in lines if line.startswith("7 "))
    assert row7.split()[-3:] == ["10:00:01", "13", "~+0s"]
    assert lines[lines.index(row9) + 1].strip() == "event Scheduled: Successfully assigned default/web-7x2kq to node02"


def test_json_output_carries_the_same_steps() -> None:
    ev = evidence()
    doc = json.loads(to_json(ev, build_steps(ev)))
    assert doc["pod"] == {"namespace": "default", "name": "web-7x2kq", "uid": UID}
    assert doc["controllers"] == ["ReplicationController/web"]
    step9 = next(s for s in doc["steps"] if s["number"] == "9")
    assert step9["time"] == "2026-12-02T10:00:01.250000Z" and step9["precision"] == "us"
    assert step9["time_source"] == "event Scheduled eventTime"


# ---- gather: the reads, against a scripted apiserver ----------------------------------------------------


def scripted_apiserver(history_status: int = 200) -> tuple[httpx.Client, list[str]]:
    """An httpx transport that answers the trace's reads from RECORDED; records the watch requests."""
    watches: list[str] = []
    pod, rc = RECORDED["pod"], RECORDED["controllers"][0]

    def lines(items: list[dict[str, Any]]) -> bytes:
        return b"".join(json.dumps(i).encode() + b"\n" for i in items)

    def handler(request: httpx.Request) -> httpx.Response:
        path, params = request.url.path, request.url.params
        if params.get("watch") == "true":
            watches.append(f"{path}?resourceVersion={params['resourceVersion']}")
            if history_status != 200:
                return httpx.Response(history_status, json={"kind": "Status", "code": history_status})
            since = int(params["resourceVersion"])
            source = RECORDED["pod_history"] if path.endswith("/pods") else RECORDED["root_history"]
            full = pod if path.endswith("/pods") else rc
            events = [{"type": v["type"], "object": {**full, "metadata": {**full["metadata"], **v["obj"]["metadata"]},
                                                     **{k: v["obj"][k] for k in ("spec", "status") if k in v["obj"]}}}
                      for v in source if v["rv"] > since]
            return httpx.Response(200, content=lines(events))
        if path == "/api/v1/namespaces/default/pods/web-7x2kq":
            return httpx.Response(200, json=pod)
        if path == "/api/v1":
            return httpx.Response(200, json={"resources": [
                {"name": "pods", "kind": "Pod", "namespaced": True},
                {"name": "replicationcontrollers/status", "kind": "ReplicationController", "namespaced": True},
                {"name": "replicationcontrollers", "kind": "ReplicationController", "namespaced": True}]})
        if path == "/api/v1/namespaces/default/replicationcontrollers/web":
            return httpx.Response(200, json=rc)
        if path == "/api/v1/namespaces/default/events":
            uid = params["fieldSelector"].removeprefix("involvedObject.uid=")
            items = [e for e in RECORDED["pod_events"] + RECORDED["owner_events"] if e["involvedObject"]["uid"] == uid]
            return httpx.Response(200, json={"items": items})
        if path == "/api/v1/nodes/node02":
            return httpx.Response(200, json=RECORDED["node"])
        return httpx.Response(404, json={"kind": "Status", "code": 404})

    return httpx.Client(base_url="http://apiserver", transport=httpx.MockTransport(handler)), watches


def test_gather_replays_history_from_the_revision_the_controller_saw() -> None:
    client, watches = scripted_apiserver()
    ev = gather(client, "default", "web-7x2kq")
    assert [c["kind"] for c in ev.controllers] == ["ReplicationController"]
    assert {e["reason"] for e in ev.pod_events} == {"Scheduled", "Pulling", "Pulled", "Created", "Started"}
    assert [v.rv for v in ev.pod_history or []] == [13, 15, 17, 22]
    assert [v.rv for v in ev.root_history or []] == [12]
    # The RC from the beginning; the pod from rev 12, the RC version the controller saw before creating it.
    assert watches == ["/api/v1/namespaces/default/replicationcontrollers?resourceVersion=1",
                       "/api/v1/namespaces/default/pods?resourceVersion=12"]
    assert ev.leases == {"kube-controller-manager": None, "kube-scheduler": None}
    assert by_number(ev)["13"].revision == 22


def test_gather_without_etcd_history() -> None:
    client, _ = scripted_apiserver(history_status=410)
    ev = gather(client, "default", "web-7x2kq")
    assert ev.pod_history is None and ev.root_history is None


def test_gather_replays_from_the_beginning_when_the_hint_missed_the_creation() -> None:
    saved = RECORDED["owner_events"][0]["involvedObject"]["resourceVersion"]
    RECORDED["owner_events"][0]["involvedObject"]["resourceVersion"] = "14"  # later than the pod's creation (13)
    try:
        client, watches = scripted_apiserver()
        ev = gather(client, "default", "web-7x2kq")
    finally:
        RECORDED["owner_events"][0]["involvedObject"]["resourceVersion"] = saved
    assert watches[1:] == ["/api/v1/namespaces/default/pods?resourceVersion=14",
                           "/api/v1/namespaces/default/pods?resourceVersion=1"]
    assert [v.rv for v in ev.pod_history or []] == [13, 15, 17, 22]


# ---- the sequence diagram (kubelab trace --svg) -------------------------------------------------------------


def _svg(lang: str = "en", ev: Evidence | None = None) -> ElementTree.Element:
    ev = ev or evidence()
    return ElementTree.fromstring(tracesvg.render_svg(ev, build_steps(ev), lang))  # type: ignore[arg-type]


SVG = "{http://www.w3.org/2000/svg}"


def test_the_diagram_names_all_six_components_and_draws_every_hop_with_its_latency() -> None:
    root = _svg()
    lifelines = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lifeline"]
    assert lifelines == ["client (kubectl)", "kube-apiserver", "etcd", "controller-manager", "scheduler",
                         "kubelet (node02)"]
    hops = [g for g in root.iter(f"{SVG}g") if "hop" in (g.get("class") or "")]
    steps = [g.get("data-step") for g in hops]
    assert steps == ["1", "1", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12a", "12b", "12c", "12d",
                     "13"]
    table = {s.number: s for s in build_steps(evidence())}
    for hop in hops[3:]:
        latency = "".join(hop.find(f"{SVG}text").find(f"{SVG}tspan").itertext())  # type: ignore[union-attr]
        step = table[hop.get("data-step") or ""]
        assert latency == (latency_text(step).replace("-", "–") if step.latency is not None else "–")
    assert "~+3s" in "".join(hops[14].itertext())  # 12b: the pull took three whole seconds


def test_watch_notifications_are_drawn_apart_from_writes() -> None:
    kinds = {g.get("data-step"): (g.get("class") or "").split()[1] for g in _svg().iter(f"{SVG}g")
             if "hop" in (g.get("class") or "")}
    assert [s for s, k in kinds.items() if k == "watch"] == ["1", "4", "5", "8", "11"]
    assert kinds["9"] == "write" and kinds["12c"] == "local"
    dashed = [line for g in _svg().iter(f"{SVG}g") if "watch" in (g.get("class") or "")
              for line in g.iter(f"{SVG}line")]
    assert dashed and all(line.get("stroke-dasharray") for line in dashed)


def test_chinese_labels() -> None:
    text = "".join(_svg("zh").itertext())
    for label in ("客户端 (kubectl)", "APIServer", "Controller Manager", "Scheduler", "绑定到节点 node02",
                  "拉取镜像", "启动容器", "Watch 事件通知"):
        assert label in text


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (Debian's chromium package)")
def test_png_through_chromium_even_beside_librsvg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in rsvg-convert that fails: --png takes it first, the tests' Chromium render does not."""
    fake = tmp_path / "rsvg-convert"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    svg = tracesvg.render_svg(evidence(), build_steps(evidence()), "en")  # type: ignore[arg-type]
    with pytest.raises(subprocess.CalledProcessError):
        tracesvg.to_png(svg, tmp_path / "rsvg.png")
    tracesvg.to_png(svg, tmp_path / "chromium.png", browser_only=True)
    assert (tmp_path / "chromium.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "chromium.png").stat().st_size > 20_000  # drawn, not a blank page


def test_steps_that_do_not_apply_are_drawn_faint() -> None:
    doc = copy.deepcopy(RECORDED)
    doc["controllers"], doc["owner_events"], doc["root_history"] = [], [], None
    faint = [g.get("data-step") for g in _svg(ev=evidence(doc)).iter(f"{SVG}g") if g.get("opacity")]
    assert {"5", "6", "7"} <= set(faint)


def audited(number: int, verb: str, resource: str, *, sub: str = "", name: str = "web-7x2kq", uid: str = "",
            rv: int | None = None, user: str = "system:node:node02", at: float = 0.0) -> Write:
    """An audited request received ``at`` seconds after 10:00:00.100 and complete 2 ms later."""
    received = datetime(2026, 12, 2, 10, 0, 0, 100000, tzinfo=UTC) + timedelta(seconds=at)
    return Write(f"id-{number}", verb, resource, sub, "default", name, uid, rv, user, "kubelab-test", 201,
                 received, received + timedelta(milliseconds=2))


def exact_evidence() -> Evidence:
    ev = evidence()
    rc_uid = RECORDED["controllers"][0]["metadata"]["uid"]
    ev.writes = [audited(1, "create", "replicationcontrollers", name="web", uid=rc_uid, rv=12, user="admin"),
                 audited(2, "create", "pods", uid=UID, rv=13, at=0.010),
                 audited(3, "create", "pods", sub="binding", at=0.030),
                 audited(4, "patch", "pods", sub="status", uid=UID, rv=17, at=0.050),
                 audited(5, "patch", "pods", sub="status", uid=UID, rv=22, at=0.080)]
    ev.audit_log = "/var/log/audit.log"
    times = {"Pulling": "0.160", "Pulled": "0.161", "Created": "0.170", "Started": "0.171"}  # the kubelet's eventTime
    for event in ev.pod_events:
        if event["reason"] in times:
            event["eventTime"] = f"2026-12-02T10:00:00{times[event['reason']][1:]}000Z"
    return ev


def test_the_audit_log_times_every_write_to_the_microsecond() -> None:
    steps = by_number(exact_evidence())
    assert (steps["2"].stamp.source, steps["2"].stamp.at.microsecond) == ("audit RequestReceived", 100000)
    assert (steps["3"].stamp.source, steps["3"].latency) == ("audit ResponseComplete", pytest.approx(0.002))
    assert steps["6"].stamp.at.microsecond == 110000 and steps["6"].audit_id == "id-2"
    assert steps["7"].revision == 13 and steps["10"].stamp.source == "audit ResponseComplete"
    assert steps["11"].stamp.source == "audit RequestReceived" and steps["11"].audit_id == "id-4"
    assert steps["13"].audit_id == "id-5" and steps["13"].stamp.at.microsecond == 182000
    # The watch deliveries are recorded by nothing: they say which hop's latency holds them.
    assert [steps[n].included_in for n in ("4", "5", "8")] == ["6", "6", "9"]
    assert all(steps[n].latency is None for n in ("4", "5", "8"))
    assert "within step 6's latency" in steps["4"].evidence


def test_the_critical_path_is_the_sum_of_the_hops() -> None:
    ev = exact_evidence()
    steps = build_steps(ev)
    path = critical_path(steps)
    assert path is not None and (path["from"], path["to"], path["exact"]) == ("2", "13", True)
    assert path["hops"] == ["3", "6", "7", "9", "10", "11", "12a", "12b", "12c", "12d", "13"]
    assert path["total_ms"] == pytest.approx(sum(s.latency for s in steps if s.latency is not None) * 1000)
    doc = json.loads(to_json(ev, steps))
    assert doc["critical_path"] == path and doc["audit_log"] == "/var/log/audit.log"
    assert {s["number"]: s["included_in"] for s in doc["steps"]}["8"] == "9"
    assert "critical path: step 2 -> step 13: " in render(ev, steps) and "(in 6)" in render(ev, steps)


def test_a_kubelet_that_acts_first_by_event_has_its_acceptance_within_that_hop() -> None:
    ev = exact_evidence()
    for event in ev.pod_events:
        if event["reason"] == "Pulling":
            event["eventTime"] = "2026-12-02T10:00:00.140000Z"  # before the first status write (0.150)
    steps = by_number(ev)
    assert steps["11"].stamp is None and steps["11"].included_in == "12a"


def test_without_matching_audit_records_the_trace_keeps_the_objects_times() -> None:
    ev = evidence()
    ev.writes = [audited(1, "create", "pods", uid="someone-else", rv=3)]
    steps = by_number(ev)
    assert steps["7"].stamp.source == "metadata.creationTimestamp" and steps["4"].included_in is None


def delivery(kind: str, name: str, rv: int | None, at_ms: float, user: str, agent: str, *,
             resource: str = "pods", started_ms: float = -5000.0, requested_ms: float = -5002.0) -> dict[str, Any]:
    """A record of /debug/watches/deliveries, ``at_ms`` after 10:00:00.100 (the audited create of the RC)."""
    def at(ms: float) -> str:
        moment = datetime(2026, 12, 2, 10, 0, 0, 100000, tzinfo=UTC) + timedelta(milliseconds=ms)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"time": at(at_ms), "type": kind, "resource": resource, "namespace": "default", "name": name,
            "resourceVersion": str(rv),
            "watcher": {"user": user, "userAgent": agent, "watchCache": agent == "watch-cache",
                        "requestReceived": at(requested_ms), "started": at(started_ms)}}


def delivered_evidence() -> Evidence:
    """The audited flow, with the apiserver's record of each version stored and delivered."""
    ev = exact_evidence()
    plain = by_number(evidence())
    rc, pod, bound, running = (plain[n].revision for n in ("3", "7", "10", "13"))
    api, rcs = "system:apiserver", "replicationcontrollers"
    ev.deliveries = [
        delivery("STORED", "web", rc, 1.0, api, "etcd-txn", resource=rcs),
        delivery("ADDED", "web", rc, 1.2, api, "watch-cache", resource=rcs),
        delivery("ADDED", "web", rc, 1.4, "system:kube-scheduler", "kube-scheduler/v1.32.0", resource=rcs),  # not it
        delivery("ADDED", "web", rc, 1.5, "system:kube-controller-manager",
                 "kube-controller-manager/v1.32.0 (linux/amd64) kubernetes/abc", resource=rcs),
        delivery("STORED", "web-7x2kq", pod, 11.0, api, "etcd-txn"),
        delivery("ADDED", "web-7x2kq", pod, 11.5, "system:kube-scheduler", "kube-scheduler/v1.32.0",
                 started_ms=-3000.0, requested_ms=-3001.5),
        delivery("STORED", "web-7x2kq", bound, 31.0, api, "etcd-txn"),
        delivery("ADDED", "web-7x2kq", bound, 31.3, "system:node:node02", "kubelet/v1.32.0",
                 started_ms=-1000.0, requested_ms=-1004.0),
        delivery("STORED", "web-7x2kq", running, 81.0, api, "etcd-txn"),
    ]
    return ev


def test_the_deliveries_time_every_step_the_audit_log_cannot() -> None:
    ev = delivered_evidence()
    steps = build_steps(ev)
    by = {s.number: s for s in steps}
    for number in ("3", "7", "10", "13"):
        assert by[number].stamp.source == "etcd txn", by[number]
    for number in ("4", "5", "8", "11"):
        assert by[number].stamp.source == "watch delivery" and by[number].included_in is None, by[number]
    assert by["2"].latency == 0 and by["3"].latency == pytest.approx(0.001)
    assert [round(by[n].latency * 1000, 3) for n in ("4", "5", "8", "11")] == [0.2, 0.3, 0.5, 0.3]
    assert "kube-controller-manager" in by["5"].evidence and "kube-scheduler" not in by["5"].evidence
    # Step 1: the last of the three streams to open (the kubelet's), and how long opening it took.
    assert by["1"].stamp.source == "watch stream started" and by["1"].latency == pytest.approx(0.004)
    path = critical_path(steps)
    assert path is not None and path["total_ms"] == pytest.approx(81.0) and path["exact"]
    assert path["total_ms"] == pytest.approx(sum(s.latency for s in steps if s.number != "1" and s.latency) * 1000)
    assert all(s.included_in is None for s in steps)
    table = render(ev, steps)
    assert "watch deliveries: the apiserver's record" in table and "(in " not in table.split("REV:")[0]
    assert json.loads(to_json(ev, steps))["deliveries"] is True


def test_deliveries_of_other_versions_are_not_taken() -> None:
    ev = exact_evidence()
    ev.deliveries = [delivery("ADDED", "web-7x2kq", 999, 11.5, "system:kube-scheduler", "kube-scheduler"),
                     delivery("STORED", "web", 998, 1.0, "system:apiserver", "etcd-txn", resource="x")]
    steps = by_number(ev)
    assert steps["8"].included_in == "9" and steps["3"].stamp.source == "audit ResponseComplete"
    assert steps["1"].stamp is None


def test_a_store_timed_after_its_first_delivery_is_bounded_by_it() -> None:
    # The writer's coroutine resumed 4.1 ms after etcd's watch had handed rev `rc` to the watch cache: the
    # store happened no later than that delivery, so step 3 takes its time and step 4 is never negative.
    ev = delivered_evidence()
    assert ev.deliveries is not None
    late = [delivery("STORED", "web", int(d["resourceVersion"]), 5.3, "system:apiserver", "etcd-txn",
                     resource="replicationcontrollers") if d["type"] == "STORED" and d["name"] == "web" else d
            for d in ev.deliveries]
    ev.deliveries = late
    by = {s.number: s for s in build_steps(ev)}
    assert by["3"].stamp is not None and by["4"].stamp is not None
    assert by["3"].stamp.at == by["4"].stamp.at and by["3"].stamp.source == "first delivery (bound)"
    assert "store time bounded by the first delivery" in by["3"].evidence and "4.1ms" in by["3"].evidence
    assert by["4"].latency == 0 and by["3"].latency == pytest.approx(0.0012)
    assert all(s.latency is None or s.latency >= 0 for s in by.values())
    assert "-" not in latency_text(by["4"])
    # A store timed before its deliveries keeps etcd's transaction time.
    assert by["7"].stamp is not None and by["7"].stamp.source == "etcd txn"


def test_a_request_timed_by_its_event_is_bounded_by_its_store() -> None:
    # No audit log: the scheduler's binding is timed by its Scheduled event (10:00:01.250), which the scheduler
    # records once the binding has returned; etcd stored the binding (rev 15) at 10:00:01.240. The request was no
    # later than its store, so step 9 takes the store's time and step 10 is never negative.
    ev = evidence()
    bound = by_number(evidence())["10"].revision
    ev.deliveries = [delivery("STORED", "web-7x2kq", bound, 1140.0, "system:apiserver", "etcd-txn")]
    by = {s.number: s for s in build_steps(ev)}
    assert by["10"].stamp is not None and by["10"].stamp.source == "etcd txn"
    assert by["9"].stamp is not None and by["9"].stamp.at == by["10"].stamp.at
    assert by["9"].stamp.source == "event Scheduled eventTime (bound by the store)"
    assert "request time bounded by its store (step 10)" in by["9"].evidence and "10.0ms" in by["9"].evidence
    assert by["10"].latency == 0 and all(s.latency is None or s.latency >= 0 for s in by.values())
    # Where the event came before the store (the audited flow's requests), the step keeps its own time.
    exact = {s.number: s for s in build_steps(delivered_evidence())}
    assert exact["9"].stamp is not None and "bound" not in exact["9"].stamp.source
