"""``kubectl debug``: ephemeral containers added through ``pods/{name}/ephemeralcontainers`` (a strategic merge
patch from kubectl, PUT or PATCH from the Python client), run once by a real kubelet, attached with ``-it``; and
kubectl's two other modes, ``--copy-to`` (a new pod) and ``node/<name>`` (a pod on the node's host namespaces)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl, kubectl_release
from support.kubelet import Node, create_pod, node_runtime, phase, running_node
from support.terminal import Terminal
from support.wait import wait_for

STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(api_url, f"debug-{uuid.uuid4().hex[:10]}", tmp_path_factory.mktemp("debug-kubelet")) as node:
        yield node


@pytest.fixture(params=["1.32", "1.27", "1.33"])
def kube(request: pytest.FixtureRequest, api_url: str, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_release(request.param), api_url, tmp_path)


def get_pod(api_url: str, ns: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").raise_for_status().json()
    return pod


def ephemeral_state(api_url: str, ns: str, pod: str, container: str) -> dict[str, Any] | None:
    """The state the kubelet reports for one ephemeral container (``None`` before it reports any)."""
    statuses = get_pod(api_url, ns, pod).get("status", {}).get("ephemeralContainerStatuses") or []
    return next((s["state"] for s in statuses if s["name"] == container), None)


def terminated(api_url: str, ns: str, pod: str, container: str) -> dict[str, Any]:
    state = wait_for(lambda: (ephemeral_state(api_url, ns, pod, container) or {}).get("terminated"),
                     what=f"{container} terminated")
    return state  # type: ignore[no-any-return]


def test_debug_runs_a_command_in_a_running_pod(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """``kubectl debug POD --image=busybox -c dbg -- echo hi``: the container runs once beside the pod's own,
    its output is in ``kubectl logs -c dbg``, the kubelet's events name it, describe lists it, and the pod's
    READY and phase do not count it."""
    create_pod(api_url, ns, node, "web", {"name": "web", "command": ["sleep", "600"]})
    kubectl("debug", "web", "-n", ns, "--image=busybox", "-c", "dbg", "--", "sh", "-c", "echo hi; exit 7")
    assert terminated(api_url, ns, "web", "dbg")["exitCode"] == 7
    assert kubectl("logs", "web", "-c", "dbg", "-n", ns).stdout == "hi\n"
    pod = get_pod(api_url, ns, "web")
    status = pod["status"]["ephemeralContainerStatuses"][0]
    assert (status["ready"], status["restartCount"], "started" in status) == (False, 0, False)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["ephemeralContainers"][0]["imagePullPolicy"]
    assert kubectl("get", "pod", "web", "-n", ns, "--no-headers").stdout.split()[1:3] == ["1/1", "Running"]
    describe = kubectl("describe", "pod", "web", "-n", ns).stdout
    assert "Ephemeral Containers:\n  dbg:\n" in describe and "Exit Code:    7" in describe
    def reasons() -> list[str]:
        events = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/events").json()["items"]
        return [e["reason"] for e in events if e["involvedObject"].get("fieldPath") == "spec.ephemeralContainers{dbg}"]
    assert wait_for(lambda: "Started" in reasons() and reasons()) == ["Pulling", "Pulled", "Created", "Started"]
    node.restart(ns, "web", "web")  # the exited debugger is adopted as exited, never run again
    assert terminated(api_url, ns, "web", "dbg")["exitCode"] == 7
    assert kubectl("logs", "web", "-c", "dbg", "-n", ns).stdout == "hi\n"


def test_debug_it_attaches_to_the_ephemeral_container(kube: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """``kubectl debug -it POD --image=busybox -- sh``: kubectl waits for the container to run, attaches (stdin,
    tty at the terminal's size); when the shell exits the container is not restarted."""
    create_pod(api_url, ns, node, "app", {"name": "app", "command": ["sleep", "600"]})
    term = Terminal(kube, "debug", "-it", "app", "-n", ns, "--image=busybox", "-c", "shell", "--", "sh", rows=20,
                    cols=70)
    term.type_until_echoed()
    term.type(b"stty size; test -t 0 && echo on-a-tty; exit 3\r")
    code, output = term.finish()
    assert code == 0, output  # as in Kubernetes, kubectl debug does not return the container's exit code
    assert "20 70" in output and "on-a-tty" in output
    assert terminated(api_url, ns, "app", "shell")["exitCode"] == 3
    status = get_pod(api_url, ns, "app")["status"]
    assert status["phase"] == "Running" and status["ephemeralContainerStatuses"][0]["restartCount"] == 0


def test_debug_copy_to_creates_a_new_pod(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """``kubectl debug POD -it --copy-to=NEW --image=busybox --same-node -- sh``: a copy of the pod with the
    debugger as one more (ordinary) container, attached; the original pod is untouched."""
    create_pod(api_url, ns, node, "orig", {"name": "orig", "command": ["sleep", "600"]})
    term = Terminal(kubectl, "debug", "orig", "-it", "-n", ns, "--copy-to=orig-copy", "--image=busybox",
                    "--same-node", "-c", "dbg", "--", "sh")
    term.type_until_echoed()
    term.type(b"echo copy-$((40+2)); exit 0\r")
    code, output = term.finish()
    assert code == 0 and "copy-42" in output, output
    copied = get_pod(api_url, ns, "orig-copy")
    assert [c["name"] for c in copied["spec"]["containers"]] == ["orig", "dbg"]
    assert "ephemeralContainers" not in get_pod(api_url, ns, "orig")["spec"]


def test_debug_node_runs_a_pod_on_the_nodes_host_namespaces(kubectl: Kubectl, api_url: str, ns: str,
                                                           node: Node) -> None:
    """``kubectl debug node/NODE -it --image=busybox``: a pod bound to the node with hostPID/hostNetwork/hostIPC
    and the node's root as the hostPath volume ``/host``. In a Linux container the volume is mounted at ``/host``;
    with the process runtime containers are host processes, so ``/`` already is the node's filesystem, and without
    a mount namespace the volume is reached at ``host/`` in the container's directory, which an event says."""
    term = Terminal(kubectl, "debug", f"node/{node.name}", "-it", "-n", ns, "--image=busybox")
    term.type_until_echoed()
    term.type(b"test -d host/proc/1 && echo host-$((1+1)); exit 0\r")
    code, output = term.finish()
    assert code == 0 and "host-2" in output, output
    pods = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods").json()["items"]
    pod = next(p for p in pods if p["metadata"]["name"].startswith(f"node-debugger-{node.name}-"))
    spec = pod["spec"]
    assert (spec["nodeName"], spec["hostPID"], spec["hostNetwork"]) == (node.name, True, True)
    assert pod["status"]["podIP"] == pod["status"]["hostIP"]
    if node_runtime(api_url, node.name) == "linux":
        return  # real containers: the volume is mounted at /host, nothing to explain
    messages = wait_for(lambda: [e["message"] for e in httpx.get(f"{api_url}/api/v1/namespaces/{ns}/events").json()
                                 ["items"] if e["reason"] == "VolumeMountsRelative"], what="the mounts event")
    assert "typed paths reach them under the container's directory (/host at /" in messages[0]


def test_ephemeralcontainers_subresource_rules(client: httpx.Client, api_url: str, ns: str, node: Node) -> None:
    """GET/PUT/PATCH of ``pods/{name}/ephemeralcontainers`` answer a Pod; only additions are accepted (422 with
    causes otherwise); the main resource cannot touch ``spec.ephemeralContainers``; 404s carry ``details``."""
    create_pod(api_url, ns, node, "rules", {"name": "main", "command": ["sleep", "600"]})
    url = f"/api/v1/namespaces/{ns}/pods/rules/ephemeralcontainers"
    pod = client.get(url).json()
    assert pod["kind"] == "Pod" and "ephemeralContainers" not in pod["spec"]
    pod["spec"]["ephemeralContainers"] = [{"name": "put", "image": "busybox", "command": ["sleep", "600"]}]
    put = client.put(url, json=pod)
    assert put.status_code == 200, put.text
    assert put.json()["spec"]["ephemeralContainers"][0]["terminationMessagePolicy"] == "File"
    wait_for(lambda: (ephemeral_state(api_url, ns, "rules", "put") or {}).get("running"), what="put running")

    stored = put.json()
    stored["metadata"].pop("resourceVersion")  # the kubelet writes status meanwhile: no precondition
    changed = copy.deepcopy(stored)
    changed["spec"]["ephemeralContainers"][0]["image"] = "alpine"
    resp = client.put(url, json=changed)
    assert resp.status_code == 422
    assert resp.json()["details"]["causes"][0]["field"] == "spec.ephemeralContainers"
    assert 'existing ephemeral containers "put" may not be changed' in resp.json()["message"]
    removed = copy.deepcopy(stored)
    removed["spec"]["ephemeralContainers"] = []
    assert "may not be removed" in client.put(url, json=removed).json()["message"]

    bad = {"spec": {"ephemeralContainers": [{"name": "main", "image": "busybox", "ports": [{"containerPort": 80}],
                                             "targetContainerName": "nope"}]}}
    resp = client.patch(url, json=bad, headers=STRATEGIC)
    assert resp.status_code == 422
    assert [(c["reason"], c["field"]) for c in resp.json()["details"]["causes"]] == [
        ("FieldValueDuplicate", "spec.ephemeralContainers[0].name"),
        ("FieldValueNotFound", "spec.ephemeralContainers[0].targetContainerName"),
        ("FieldValueForbidden", "spec.ephemeralContainers[0].ports")]  # patch items first
    main = client.patch(f"/api/v1/namespaces/{ns}/pods/rules", headers=STRATEGIC,
                        json={"spec": {"ephemeralContainers": [{"name": "sneaky", "image": "busybox"}]}})
    assert main.status_code == 422 and main.json()["details"]["causes"][0]["field"] == "spec"

    missing = client.patch(f"/api/v1/namespaces/{ns}/pods/absent/ephemeralcontainers", json=bad, headers=STRATEGIC)
    assert (missing.status_code, missing.json()["details"]) == (404, {"name": "absent", "kind": "pods"})
    unknown = client.get(f"/api/v1/namespaces/{ns}/pods/rules/nonsense")
    assert (unknown.status_code, unknown.json()["details"]) == (404, {})


def test_python_client_adds_ephemeral_containers(api: Any, api_url: str, ns: str, node: Node) -> None:
    """The official client's ``patch_/read_/replace_namespaced_pod_ephemeralcontainers``."""
    from kubernetes import client as k8s

    create_pod(api_url, ns, node, "py", {"name": "main", "command": ["sleep", "600"]})
    core = k8s.CoreV1Api(api)
    patched = core.patch_namespaced_pod_ephemeralcontainers("py", ns, {"spec": {"ephemeralContainers": [
        {"name": "first", "image": "busybox", "command": ["echo", "from-python"]}]}})
    assert [c.name for c in patched.spec.ephemeral_containers] == ["first"]
    pod = core.read_namespaced_pod_ephemeralcontainers("py", ns)
    pod.metadata.resource_version = None  # the kubelet writes the first one's status meanwhile
    pod.spec.ephemeral_containers.append(k8s.V1EphemeralContainer(name="second", image="busybox",
                                                                  command=["echo", "again"]))
    replaced = core.replace_namespaced_pod_ephemeralcontainers("py", ns, pod)
    assert [c.name for c in replaced.spec.ephemeral_containers] == ["first", "second"]
    for name in ("first", "second"):
        assert terminated(api_url, ns, "py", name)["exitCode"] == 0
    assert core.read_namespaced_pod_log("py", ns, container="first") == "from-python\n"
    with pytest.raises(k8s.ApiException) as err:
        core.patch_namespaced_pod_ephemeralcontainers("py", ns, {"spec": {"ephemeralContainers": [
            {"name": "first", "image": "alpine", "command": ["echo", "from-python"]}]}})
    assert err.value.status == 422
    assert phase(api_url, ns, "py") == "Running"
