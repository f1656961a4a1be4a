"""-1 in any integer field of a valid object is kube's 422, naming that field (replicas, ports, grace periods,
deadlines, backoff and history limits, probe timings, security-context ids …).

Each kind starts from an object the server accepts (checked first), so a 422 can only come from the value put
in; every integer of that object is tried in turn, so a field added to the base objects is covered too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx

Path = tuple[str | int, ...]

CONTAINER = {"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 8080}],
             "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
             "livenessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 1, "timeoutSeconds": 1,
                               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3,
                               "terminationGracePeriodSeconds": 5}}
POD_SPEC = {"containers": [CONTAINER], "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "supplementalGroups": [5]},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
            "volumes": [{"name": "s", "secret": {"secretName": "s", "defaultMode": 420,
                                                 "items": [{"key": "k", "path": "k", "mode": 256}]}},
                        {"name": "p", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}}]}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": POD_SPEC}
JOB_TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {**POD_SPEC, "restartPolicy": "Never"}}
SELECTOR = {"matchLabels": {"app": "x"}}

BASES: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/{ns}/pods", {"spec": {**POD_SPEC, "activeDeadlineSeconds": 10}}),
    ("/api/v1/namespaces/{ns}/replicationcontrollers",
     {"spec": {"replicas": 1, "minReadySeconds": 1, "selector": {"app": "x"}, "template": TEMPLATE}}),
    ("/apis/apps/v1/namespaces/{ns}/replicasets",
     {"spec": {"replicas": 1, "minReadySeconds": 1, "selector": SELECTOR, "template": TEMPLATE}}),
    ("/apis/apps/v1/namespaces/{ns}/deployments",
     {"spec": {"replicas": 1, "minReadySeconds": 1, "revisionHistoryLimit": 1, "progressDeadlineSeconds": 700,
               "selector": SELECTOR, "template": TEMPLATE}}),
    ("/apis/apps/v1/namespaces/{ns}/daemonsets",
     {"spec": {"minReadySeconds": 1, "revisionHistoryLimit": 1, "selector": SELECTOR, "template": TEMPLATE}}),
    ("/apis/batch/v1/namespaces/{ns}/jobs",
     {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 1, "activeDeadlineSeconds": 5,
               "ttlSecondsAfterFinished": 5, "template": JOB_TEMPLATE}}),
    ("/apis/batch/v1/namespaces/{ns}/cronjobs",
     {"spec": {"schedule": "* * * * *", "startingDeadlineSeconds": 5, "successfulJobsHistoryLimit": 1,
               "failedJobsHistoryLimit": 1, "jobTemplate": {"spec": {"backoffLimit": 1, "template": JOB_TEMPLATE}}}}),
    ("/api/v1/namespaces/{ns}/services",
     {"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30080}],
               "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10}}}}),
    ("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
     {"spec": {"leaseDurationSeconds": 10, "leaseTransitions": 1}}),
    ("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    ("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
     {"spec": {"minReplicas": 1, "maxReplicas": 3,
               "scaleTargetRef": {"kind": "Deployment", "name": "x", "apiVersion": "apps/v1"},
               "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                   "type": "Utilization", "averageUtilization": 50}}}],
               "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "policies": [
                   {"type": "Pods", "value": 4, "periodSeconds": 15}]}}}}),
    ("/api/v1/namespaces/{ns}/endpoints",
     {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
    ("/apis/apps/v1/namespaces/{ns}/controllerrevisions", {"revision": 1, "data": {}}),
]


def may_be_negative(path: Path) -> bool:
    """What kube lets be negative: tolerationSeconds (<= 0: evict at once) and a pod's own
    terminationGracePeriodSeconds (kept for old objects; a deletion treats it as 1 second)."""
    return path[-1] == "tolerationSeconds" or path[-2:] == ("spec", "terminationGracePeriodSeconds")


def integer_paths(obj: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from integer_paths(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from integer_paths(value, (*path, i))
    elif isinstance(obj, int) and not isinstance(obj, bool):
        yield path


def with_value(obj: dict[str, Any], path: Path, value: int) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def field_path(path: Path) -> str:
    """``spec.containers[0].ports[0].containerPort``: kube's field path."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def test_minus_one_in_any_integer_field_is_422_naming_it(client: httpx.Client, ns: str) -> None:
    failures: list[str] = []
    tried = 0
    for template, base in BASES:
        url = template.format(ns=ns)
        obj = {"metadata": {"name": "neg"}, **base}
        resp = client.post(url, json=obj, params={"dryRun": "All"})
        assert resp.status_code == 201, f"base object for {url} refused: {resp.text}"
        for path in integer_paths(base):
            if may_be_negative(path):
                continue
            tried += 1
            resp = client.post(url, json=with_value(obj, path, -1), params={"dryRun": "All"})
            fields = [c.get("field") for c in (resp.json().get("details") or {}).get("causes") or []]
            if resp.status_code != 422 or field_path(path) not in fields:
                failures.append(f"{template.rsplit('/', 1)[-1]} {field_path(path)}=-1: {resp.status_code} "
                                f"{resp.text[:200]}")
    assert tried > 80
    assert not failures, "\n".join(failures)
