"""Jobs end to end on `kubelab up --nodes 1` (real etcd, apiserver, controller-manager, scheduler and kubelet): the
real kubectl 1.32 creates, waits for, reads, describes and deletes Jobs whose pods really run; a failing Job
reaches its backoffLimit, an Indexed Job hands each pod its index, the apiserver refuses what ValidateJob refuses,
and the official Python client's BatchV1Api reads and writes them. kubectl create cronjob, get cj and create job
--from=cronjob work (the schedule itself is tested with a movable clock in the unit tests, to wait for no minute).
kubectl 1.27 and 1.33 read the table too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from conftest import KUBECTL, ROOT, Kubectl, kubectl_release
from kubelab.etcd import free_port
from support.wait import wait_for

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One node's cluster for the module, on a free port; its URL."""
    data = tmp_path_factory.mktemp("jobs") / "data"
    port = free_port()
    up = subprocess.run([sys.executable, "-m", "kubelab", "up", "--detach", "--nodes", "1", "--port", str(port),
                         "--data-dir", str(data)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        subprocess.run([sys.executable, "-m", "kubelab", "down", "--data-dir", str(data)], cwd=ROOT,
                       capture_output=True, timeout=120)


@pytest.fixture()
def kc(cluster: str, tmp_path: Path) -> Kubectl:
    return Kubectl(KUBECTL, cluster, tmp_path)


def job_yaml(name: str, command: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        **spec, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "command": ["sh", "-c", command]}]}}}})


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


def test_create_wait_get_logs_describe(kc: Kubectl) -> None:
    assert kc("create", "job", "pi", "--image=busybox", "--", "sh", "-c", "echo done").stdout.strip() \
        == "job.batch/pi created"
    assert kc("wait", "--for=condition=complete", "job/pi", "--timeout=60s").stdout.strip() \
        == "job.batch/pi condition met"
    out = kc("get", "jobs").stdout
    assert out.split()[:5] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert rows(out)[0][:3] == ["pi", "Complete", "1/1"]
    assert kc("logs", "job/pi").stdout == "done\n"
    described = kc("describe", "job", "pi").stdout
    for text in ("Completion Mode:  NonIndexed", "Backoff Limit:    6", "0 Active (0 Ready) / 1 Succeeded / 0 Failed",
                 "Created pod: pi-", "Job completed", "job-controller"):
        assert text in described
    job = json.loads(kc("get", "job", "pi", "-o", "json").stdout)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid, "job-name": "pi"}
    assert [c["type"] for c in job["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert job["status"]["succeeded"] == 1 and job["status"]["completionTime"]
    pods = json.loads(kc("get", "pods", "-l", "job-name=pi", "-o", "json").stdout)["items"]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"]
    assert not pods[0]["metadata"].get("finalizers")  # counted, so the tracking finalizer is gone
    kc("delete", "job", "pi")


def test_failing_job_reaches_its_backoff_limit(kc: Kubectl) -> None:
    kc("create", "-f", "-", input=job_yaml("oops", "echo failing; exit 2", backoffLimit=0))
    kc("wait", "--for=condition=failed", "job/oops", "--timeout=60s")
    assert rows(kc("get", "job", "oops").stdout)[0][:3] == ["oops", "Failed", "0/1"]
    described = kc("describe", "job", "oops").stdout
    assert "BackoffLimitExceeded" in described and "Job has reached the specified backoff limit" in described
    status = json.loads(kc("get", "job", "oops", "-o", "json").stdout)["status"]
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    assert status["failed"] == 1 and "completionTime" not in status
    kc("delete", "job", "oops")


def test_parallel_job_and_delete_takes_its_pods(kc: Kubectl) -> None:
    kc("create", "-f", "-", input=job_yaml("par", "sleep 1; echo ok", parallelism=2, completions=4))
    kc("wait", "--for=condition=complete", "job/par", "--timeout=90s")
    assert rows(kc("get", "job", "par").stdout)[0][:3] == ["par", "Complete", "4/4"]
    pods = rows(kc("get", "pods", "-l", "job-name=par").stdout)
    assert len(pods) == 4 and all(p[2] == "Completed" for p in pods)
    assert kc("delete", "job", "par").stdout.strip() == 'job.batch "par" deleted'
    wait_for(lambda: not rows(kc("get", "pods", "-l", "job-name=par").stdout), what="the Job's pods deleted")


def test_indexed_job_gives_each_pod_its_index(kc: Kubectl) -> None:
    kc("create", "-f", "-", input=job_yaml("idx", "echo index $JOB_COMPLETION_INDEX", parallelism=3,
                                           completions=3, completionMode="Indexed"))
    kc("wait", "--for=condition=complete", "job/idx", "--timeout=90s")
    pods = json.loads(kc("get", "pods", "-l", "job-name=idx", "-o", "json").stdout)["items"]
    logs = sorted(kc("logs", p["metadata"]["name"]).stdout.strip() for p in pods)
    assert logs == ["index 0", "index 1", "index 2"]
    assert json.loads(kc("get", "job", "idx", "-o", "json").stdout)["status"]["completedIndexes"] == "0-2"
    kc("delete", "job", "idx")


def test_invalid_jobs_are_refused(kc: Kubectl, cluster: str) -> None:
    bad = json.loads(job_yaml("bad", "true", backoffLimit=-1, completionMode="Sometimes"))
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    result = kc("create", "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    for text in ('The Job "bad" is invalid', "spec.backoffLimit: Invalid value: -1",
                 'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", '
                 '"Never"', 'spec.completionMode: Unsupported value: "Sometimes"'):
        assert text in result.stderr
    kc("create", "-f", "-", input=job_yaml("frozen", "true"))
    with httpx.Client(base_url=cluster) as client:
        resp = client.patch("/apis/batch/v1/namespaces/default/jobs/frozen",
                            json={"spec": {"template": {"spec": {"activeDeadlineSeconds": 5}}}},
                            headers={"Content-Type": "application/merge-patch+json"})
        assert resp.status_code == 422, resp.text
        assert resp.json()["details"]["causes"][0]["field"] == "spec.template"
    kc("delete", "job", "frozen")


def test_python_client_batch_v1(cluster: str) -> None:
    cfg = k8s.Configuration()
    cfg.host = cluster
    with k8s.ApiClient(cfg) as api_client:
        batch = k8s.BatchV1Api(api_client)
        body = k8s.V1Job(metadata=k8s.V1ObjectMeta(name="py"), spec=k8s.V1JobSpec(template=k8s.V1PodTemplateSpec(
            spec=k8s.V1PodSpec(restart_policy="Never", containers=[
                k8s.V1Container(name="main", image="busybox", command=["true"])]))))
        created = batch.create_namespaced_job("default", body)
        assert created.spec.backoff_limit == 6 and created.spec.completion_mode == "NonIndexed"
        # As `kubectl wait --for=condition=Complete`: kube 1.31+ counts the pod (status.succeeded) and sets
        # SuccessCriteriaMet first, Complete once no pod is left to count, so `succeeded` alone may come earlier.
        done = wait_for(lambda: (j := batch.read_namespaced_job_status("py", "default")).status.conditions and any(
            c.type == "Complete" and c.status == "True" for c in j.status.conditions) and j, what="the Job to complete")
        assert done.status.succeeded == 1 and not done.status.active
        assert "py" in [j.metadata.name for j in batch.list_namespaced_job("default").items]
        batch.delete_namespaced_job("py", "default", propagation_policy="Background")
        cron = k8s.V1CronJob(metadata=k8s.V1ObjectMeta(name="pycron"), spec=k8s.V1CronJobSpec(
            schedule="@yearly", time_zone="Asia/Shanghai", job_template=k8s.V1JobTemplateSpec(spec=body.spec)))
        stored = batch.create_namespaced_cron_job("default", cron)
        assert stored.spec.concurrency_policy == "Allow" and stored.spec.successful_jobs_history_limit == 3
        assert [c.metadata.name for c in batch.list_namespaced_cron_job("default").items] == ["pycron"]
        batch.delete_namespaced_cron_job("pycron", "default")


def test_cronjob_create_get_and_job_from_it(kc: Kubectl) -> None:
    assert kc("create", "cronjob", "hello", "--image=busybox", "--schedule=0 0 1 1 *", "--", "sh", "-c",
              "echo hello from cron").stdout.strip() == "cronjob.batch/hello created"
    out = kc("get", "cj").stdout
    assert out.split()[:8] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert rows(out)[0][:10] == ["hello", "0", "0", "1", "1", "*", "<none>", "False", "0", "<none>"]
    assert kc("create", "job", "manual", "--from=cronjob/hello").stdout.strip() == "job.batch/manual created"
    kc("wait", "--for=condition=complete", "job/manual", "--timeout=60s")
    assert kc("logs", "job/manual").stdout == "hello from cron\n"
    job = json.loads(kc("get", "job", "manual", "-o", "json").stdout)
    assert job["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    assert [(r["kind"], r["name"]) for r in job["metadata"]["ownerReferences"]] == [("CronJob", "hello")]
    assert "Schedule:                      0 0 1 1 *" in kc("describe", "cronjob", "hello").stdout
    refused = kc("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *", check=False)
    assert 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61' in refused.stderr
    kc("delete", "cronjob", "hello")  # its Jobs go with it
    wait_for(lambda: "manual" not in kc("get", "jobs").stdout, what="the CronJob's Job deleted")


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_other_kubectl_releases_read_jobs(version: str, cluster: str, tmp_path: Path) -> None:
    other = Kubectl(kubectl_release(version), cluster, tmp_path)
    other("create", "-f", "-", input=job_yaml(f"v{version.replace('.', '')}", "true"))
    other("wait", "--for=condition=complete", f"job/v{version.replace('.', '')}", "--timeout=60s")
    assert rows(other("get", "job", f"v{version.replace('.', '')}").stdout)[0][1] in ("Complete", "1/1")
