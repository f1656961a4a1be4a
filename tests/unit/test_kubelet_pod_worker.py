"""kubelet.pod_worker over the FakeAPIServer with real processes: a deletion the watch delivers while the worker's
status PATCH is in flight is not undone by that PATCH's (older) answer, so the pod is still killed and removed; a
status PATCH that fails (the apiserver restarting) is written again without anything else waking the worker, and so
is the confirmation of a deletion."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from kubeclient import Clientset, FakeAPIServer
from kubelet.kubelet import Kubelet


async def _node_with_pod(tmp_path: Path, name: str, seconds: int) -> tuple[FakeAPIServer, Clientset, dict[str, Any],
                                                                         Kubelet]:
    """A node's kubelet (not started) over the FakeAPIServer, and a pod bound to it that runs ``sleep seconds``."""
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create({"metadata": {"name": "n1"}})  # no podCIDR: the pod gets the host IP
    pod = await cs.pods.create({"metadata": {"name": name, "namespace": "default"}, "spec": {
        "nodeName": "n1", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": "busybox", "command": ["sleep", str(seconds)]}]}})
    return fake, cs, pod, Kubelet(cs, "n1", tmp_path)


async def test_a_deletion_pushed_during_a_status_write_is_not_lost(tmp_path: Path) -> None:
    fake, cs, pod, kubelet = await _node_with_pod(tmp_path, "burn", 4321)
    patch = cs.pods.patch
    deleted: list[dict[str, Any]] = []

    async def patch_then_delete(*args: Any, **kwargs: Any) -> Any:
        answer = await patch(*args, **kwargs)
        # the Deployment's rollout deletes the pod; the watch event overtakes the PATCH's answer
        if not deleted and kwargs.get("subresource") == "status":
            await cs.pods.delete("burn", "default")
            deleted.append(await cs.pods.get("burn", "default"))
            kubelet.workers[pod["metadata"]["uid"]].push(deleted[0])
        return answer

    cs.pods.patch = patch_then_delete  # type: ignore[method-assign]
    kubelet._on_add(pod)
    worker = kubelet.workers[pod["metadata"]["uid"]]
    await asyncio.wait_for(worker.task, 20)  # it terminates: the containers killed and the deletion confirmed
    assert deleted and deleted[0]["metadata"].get("deletionTimestamp")
    assert [p for p in fake.objects(cs.pods.resource) if p["metadata"]["name"] == "burn"] == []
    assert subprocess.run(["pgrep", "-f", "sleep 4321"], capture_output=True).stdout == b""  # killed


async def test_a_status_write_lost_to_an_apiserver_restart_is_written_again(tmp_path: Path) -> None:
    _, cs, pod, kubelet = await _node_with_pod(tmp_path, "lost", 4322)
    patch = cs.pods.patch
    refused: list[str] = []

    async def patch_or_reset(*args: Any, **kwargs: Any) -> Any:
        if len(refused) < 2 and kwargs.get("subresource") == "status":
            refused.append(args[0])
            raise ConnectionResetError(104, "Connection reset by peer")  # as aiohttp's ClientOSError is
        return await patch(*args, **kwargs)

    cs.pods.patch = patch_or_reset  # type: ignore[method-assign]
    kubelet._on_add(pod)
    worker = kubelet.workers[pod["metadata"]["uid"]]
    try:
        for _ in range(100):  # the worker is never pushed a newer pod: only its own retry can write the status
            stored = await cs.pods.get("lost", "default")
            if (stored.get("status") or {}).get("phase") == "Running":
                break
            await asyncio.sleep(0.1)
        assert refused == ["lost", "lost"]
        assert stored["status"]["phase"] == "Running"
        assert stored["status"]["containerStatuses"][0]["state"].get("running")
    finally:
        await cs.pods.delete("lost", "default")
        worker.push(await cs.pods.get("lost", "default"))
        await asyncio.wait_for(worker.task, 20)
    assert subprocess.run(["pgrep", "-f", "sleep 4322"], capture_output=True).stdout == b""


async def test_a_deletion_confirmation_lost_to_an_apiserver_restart_is_sent_again(tmp_path: Path) -> None:
    fake, cs, pod, kubelet = await _node_with_pod(tmp_path, "gone", 4323)
    delete = cs.pods.delete
    refused: list[str] = []

    async def delete_or_reset(*args: Any, **kwargs: Any) -> Any:
        if not refused and kwargs.get("grace_period_seconds") == 0:
            refused.append(args[0])
            raise ConnectionResetError(104, "Connection reset by peer")
        return await delete(*args, **kwargs)

    cs.pods.delete = delete_or_reset  # type: ignore[method-assign]
    kubelet._on_add(pod)
    worker = kubelet.workers[pod["metadata"]["uid"]]
    for _ in range(100):
        if ((await cs.pods.get("gone", "default")).get("status") or {}).get("phase") == "Running":
            break
        await asyncio.sleep(0.1)
    await delete("gone", "default")  # graceful: the kubelet stops the container, then confirms
    worker.push(await cs.pods.get("gone", "default"))
    await asyncio.wait_for(worker.task, 20)
    assert refused == ["gone"]
    assert [p for p in fake.objects(cs.pods.resource) if p["metadata"]["name"] == "gone"] == []
    assert subprocess.run(["pgrep", "-f", "sleep 4323"], capture_output=True).stdout == b""
