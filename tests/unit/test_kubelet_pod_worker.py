"""kubelet.pod_worker over the FakeAPIServer with real processes: a deletion the watch delivers while the worker's
status PATCH is in flight is not undone by that PATCH's (older) answer, so the pod is still killed and removed."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from kubeclient import Clientset, FakeAPIServer
from kubelet.kubelet import Kubelet


async def test_a_deletion_pushed_during_a_status_write_is_not_lost(tmp_path: Path) -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.nodes.create({"metadata": {"name": "n1"}})  # no podCIDR: the pod gets the host IP
    pod = await cs.pods.create({"metadata": {"name": "burn", "namespace": "default"}, "spec": {
        "nodeName": "n1", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "4321"]}]}})
    kubelet = Kubelet(cs, "n1", tmp_path)
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
