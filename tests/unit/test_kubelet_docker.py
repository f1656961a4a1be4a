"""The Docker runtime against a fake engine: an aiohttp server on a unix socket that implements just the endpoints
``kubelet.docker`` calls and records every request, so the tests assert what a real engine would receive (the
real engine is exercised by tests/integration/test_kubelet_docker.py where one is reachable)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubelet.probes import Result, run_exec
from kubelet.runtime import docker
from kubelet.runtime.cri import ContainerMeta, ExecTarget

V = f"/v{docker.API_VERSION}"


@dataclass
class FakeContainer:
    id: str
    body: dict[str, Any]
    name: str
    output: list[tuple[int, str, bytes]] = field(default_factory=list)  # (stream, timestamp, text)
    running: bool = False
    code: int = 0
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    started_at: str = "2026-01-02T03:04:05.123456789Z"

    def exit(self, code: int) -> None:
        self.running, self.code = False, code
        self.exited.set()


class FakeEngine:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.containers: dict[str, FakeContainer] = {}
        self.images: list[dict[str, Any]] = []
        self.pullable = {"docker.io/library/busybox": 4_300_000}
        self.output: list[tuple[int, str, bytes]] = []  # what the next started container prints
        self.exit_code: int | None = None  # the next started container exits at once with this code
        self.execs: dict[str, dict[str, Any]] = {}
        app = web.Application()
        app.router.add_get("/_ping", self.ping)
        app.router.add_route("*", V + "/{tail:.*}", self.handle)
        self.app = app

    async def ping(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path, dict(request.query), None))
        return web.Response(text="OK")

    def paths(self, method: str) -> list[str]:
        return [path[len(V):] for m, path, _, _ in self.requests if m == method]

    def request(self, method: str, suffix: str) -> tuple[dict[str, str], Any]:
        for m, path, query, body in self.requests:
            if m == method and path.endswith(suffix):
                return query, body
        raise AssertionError(f"no {method} …{suffix} in {self.requests}")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.requests.append((request.method, request.path, dict(request.query), body))
        parts = request.path[len(V) + 1:].split("/")
        method = request.method
        if parts == ["version"]:
            return web.json_response({"Version": "24.0.7", "ApiVersion": "1.43"})
        if parts == ["images", "json"]:
            return web.json_response(self.images)
        if parts == ["images", "create"]:
            return await self.pull(request)
        if parts == ["containers", "json"]:
            return web.json_response(self.list(json.loads(request.query["filters"])["label"]))
        if parts == ["containers", "create"]:
            name = request.query["name"]
            if any(c.name == name for c in self.containers.values()):
                return web.json_response({"message": f'Conflict. The container name "/{name}" is already in use'},
                                         status=409)
            cid = secrets.token_hex(32)
            self.containers[cid] = FakeContainer(cid, body, name)
            return web.json_response({"Id": cid, "Warnings": []}, status=201)
        if parts[0] == "exec":
            return await self.exec(request, parts[1], parts[2])
        c = self.containers.get(parts[1])
        if c is None:
            return web.json_response({"message": f"No such container: {parts[1]}"}, status=404)
        action = parts[2] if len(parts) > 2 else ""
        if method == "DELETE":
            del self.containers[c.id]
            c.exit(c.code if not c.running else 137)
            return web.Response(status=204)
        if action == "start":
            c.running, c.output = True, list(self.output)
            if self.exit_code is not None:
                c.exit(self.exit_code)
            return web.Response(status=204)
        if action == "json":
            return web.json_response(self.inspect(c))
        if action == "wait":
            await c.exited.wait()
            return web.json_response({"StatusCode": c.code, "Error": None})
        if action == "stop":
            if not c.running:
                return web.Response(status=304)
            c.exit(143)
            return web.Response(status=204)
        if action == "logs":
            return await self.logs(request, c)
        if action == "exec":
            eid = secrets.token_hex(8)
            self.execs[eid] = {"container": c.id, "body": body}
            return web.json_response({"Id": eid}, status=201)
        return web.json_response({"message": "page not found"}, status=404)

    def inspect(self, c: FakeContainer) -> dict[str, Any]:
        env = [*c.body.get("Env", []), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        return {"Id": c.id, "Name": "/" + c.name, "Config": {"Labels": c.body.get("Labels", {}), "Env": env},
                "HostConfig": c.body.get("HostConfig", {}),
                "State": {"Running": c.running, "ExitCode": c.code, "StartedAt": c.started_at}}

    def list(self, wanted: list[str]) -> list[dict[str, Any]]:
        def matches(labels: dict[str, str]) -> bool:
            return all(labels.get(w.split("=", 1)[0]) == w.split("=", 1)[1] if "=" in w else w in labels
                       for w in wanted)
        return [{"Id": c.id, "Names": ["/" + c.name], "Labels": c.body["Labels"], "Created": i}
                for i, c in enumerate(self.containers.values()) if matches(c.body.get("Labels") or {})]

    async def pull(self, request: web.Request) -> web.StreamResponse:
        repo, tag = request.query["fromImage"], request.query["tag"]
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(json.dumps({"status": f"Pulling from {repo}", "id": tag}).encode() + b"\r\n")
        if repo not in self.pullable:
            await resp.write(json.dumps({"errorDetail": {"message": "denied"},
                                         "error": f"pull access denied for {repo}, repository does not exist"})
                             .encode() + b"\r\n")
        else:
            short = repo.removeprefix("docker.io/library/")
            self.images.append({"Id": "sha256:" + "a" * 64, "RepoTags": [f"{short}:{tag}"],
                                "RepoDigests": [f"{short}@sha256:{'b' * 64}"], "Size": self.pullable[repo]})
            await resp.write(json.dumps({"status": f"Status: Downloaded newer image for {short}:{tag}"}).encode())
        await resp.write_eof()
        return resp

    async def logs(self, request: web.Request, c: FakeContainer) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/vnd.docker.multiplexed-stream"})
        await resp.prepare(request)
        seconds, _, nanos = request.query.get("since", "0").partition(".")
        since = int(seconds) * 1_000_000_000 + int(nanos.ljust(9, "0"))
        sent = 0
        while True:
            for stream, ts, text in c.output[sent:]:
                if docker._nanos(ts) >= since:
                    payload = ts.encode() + b" " + text
                    await resp.write(bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload)
            sent = len(c.output)
            if not c.running or request.query.get("follow") != "1":
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(c.exited.wait(), 0.05)
        await resp.write_eof()
        return resp

    async def exec(self, request: web.Request, eid: str, action: str) -> web.StreamResponse:
        e = self.execs[eid]
        if action == "json":
            return web.json_response({"Running": False, "ExitCode": e["code"]})
        cmd = e["body"]["Cmd"]
        resp = web.StreamResponse(headers={"Content-Type": "application/vnd.docker.raw-stream"})
        await resp.prepare(request)
        if cmd[0] == "nope":
            out, e["code"] = (2, b'OCI runtime exec failed: exec: "nope": executable file not found in $PATH\n'), 127
        else:
            out, e["code"] = (1, " ".join(cmd).encode() + b"\n"), int(cmd[-1]) if cmd[-1].isdigit() else 0
        await resp.write(bytes([out[0], 0, 0, 0]) + len(out[1]).to_bytes(4, "big") + out[1])
        await resp.write_eof()
        return resp


@pytest.fixture()
async def engine(tmp_path: Path) -> AsyncIterator[FakeEngine]:
    fake = FakeEngine()
    runner = web.AppRunner(fake.app)
    await runner.setup()
    sock = tmp_path / "d.sock"
    await web.UnixSite(runner, str(sock)).start()
    fake.host = f"unix://{sock}"  # type: ignore[attr-defined]
    try:
        yield fake
    finally:
        for c in fake.containers.values():
            c.exit(137)  # the engine's pending waits and log streams end
        await runner.cleanup()


@pytest.fixture()
async def runtime(engine: FakeEngine) -> AsyncIterator[docker.DockerRuntime]:
    rt = docker.DockerRuntime("n1", docker.Engine(engine.host))  # type: ignore[attr-defined]
    await rt.connect()
    try:
        yield rt
    finally:
        await rt.close()


def meta(uid: str = "uid-1", restarts: int = 0) -> ContainerMeta:
    return ContainerMeta(uid, "default", "web", restarts, None)


# --- the create body -----------------------------------------------------------------------------------------------
def test_command_and_args_map_to_entrypoint_and_cmd(tmp_path: Path) -> None:
    def body(**spec: Any) -> dict[str, Any]:
        return docker.create_body({"name": "c", "image": "busybox:1.36", **spec}, tmp_path, {}, tmp_path / "c.log",
                                  meta(), "n1")

    both = body(command=["sh", "-c"], args=["echo hi"])
    assert (both["Entrypoint"], both["Cmd"]) == (["sh", "-c"], ["echo hi"])
    only_command = body(command=["sleep", "5"])
    assert only_command["Entrypoint"] == ["sleep", "5"] and "Cmd" not in only_command  # the image's CMD is dropped
    only_args = body(args=["5"])
    assert "Entrypoint" not in only_args and only_args["Cmd"] == ["5"]  # the image's ENTRYPOINT is kept
    neither = body()
    assert "Entrypoint" not in neither and "Cmd" not in neither


def test_create_body_env_binds_network_and_labels(tmp_path: Path) -> None:
    data, config = tmp_path / "volumes" / "data", tmp_path / "volumes" / "config"
    data.mkdir(parents=True)
    config.mkdir()
    workdir = tmp_path / "containers" / "web"
    (workdir / "var").mkdir(parents=True)
    (workdir / "data").symlink_to(data)
    (workdir / "var" / "cfg").symlink_to(config)
    spec = {"name": "web", "image": "busybox", "workingDir": "/data",
            "volumeMounts": [{"name": "d", "mountPath": "/data"},
                             {"name": "c", "mountPath": "/var/cfg", "readOnly": True}]}
    body = docker.create_body(spec, workdir, {"A": "1", "B": "x=y"}, tmp_path / "web.log",
                              ContainerMeta("uid-9", "prod", "web-0", 2, {"terminated": {"exitCode": 1}}), "n1")
    assert body["Image"] == "busybox"
    assert body["Env"] == ["A=1", "B=x=y"]
    assert body["WorkingDir"] == "/data"
    assert body["HostConfig"] == {"NetworkMode": "host", "Binds": [f"{data}:/data", f"{config}:/var/cfg:ro"]}
    labels = body["Labels"]
    assert {k: labels[k] for k in (docker.POD_UID, docker.POD_NAMESPACE, docker.POD_NAME, docker.CONTAINER_NAME)} == {
        "io.kubernetes.pod.uid": "uid-9", "io.kubernetes.pod.namespace": "prod", "io.kubernetes.pod.name": "web-0",
        "io.kubernetes.container.name": "web"}
    assert labels[docker.RESTART_COUNT] == "2" and json.loads(labels[docker.LAST_STATE])["terminated"]["exitCode"] == 1
    assert labels[docker.LOG_PATH] == str(tmp_path / "web.log") and labels[docker.NODE] == "n1"
    assert docker.container_name(ContainerMeta("uid-9", "prod", "web-0", 2), "web") == "k8s_web_web-0_prod_uid-9_2"


def test_cri_lines_from_log_frames() -> None:
    lines = docker.cri_lines(1, b"2026-01-02T03:04:05.000000001Z hello\n", "x")
    assert lines == [("2026-01-02T03:04:05.000000001Z", b"2026-01-02T03:04:05.000000001Z stdout F hello\n")]
    partial = docker.cri_lines(2, b"2026-01-02T03:04:05.5Z no newline", "x")
    assert partial[0][1] == b"2026-01-02T03:04:05.5Z stderr P no newline\n"
    assert docker._nanos("2026-01-02T03:04:05.5Z") - docker._nanos("2026-01-02T03:04:05Z") == 500_000_000


# --- through the engine --------------------------------------------------------------------------------------------
async def test_start_logs_and_exit(engine: FakeEngine, runtime: docker.DockerRuntime, tmp_path: Path) -> None:
    engine.output = [(1, "2026-01-02T03:04:05.000000001Z", b"out line\n"),
                     (2, "2026-01-02T03:04:05.000000002Z", b"err line\n"),
                     (1, "2026-01-02T03:04:05.000000003Z", b"tail")]
    engine.exit_code = 3
    log_path = tmp_path / "logs" / "c.log"
    c = await runtime.start({"name": "c", "image": "busybox", "command": ["sh"]}, tmp_path, {"A": "1"}, log_path,
                            meta())
    assert await asyncio.wait_for(c.wait(), 5) == 3
    assert c.container_id == f"docker://{c.id}" and c.started_at == "2026-01-02T03:04:05Z"
    query, body = engine.request("POST", "/containers/create")
    assert query == {"name": "k8s_c_web_default_uid-1_0"} and body["Entrypoint"] == ["sh"]
    assert engine.paths("POST")[1:3] == [f"/containers/{c.id}/start", f"/containers/{c.id}/wait"]
    logs_query, _ = engine.request("GET", f"/containers/{c.id}/logs")
    assert logs_query == {"follow": "1", "stdout": "1", "stderr": "1", "timestamps": "1"}
    assert log_path.read_text().splitlines() == ["2026-01-02T03:04:05.000000001Z stdout F out line",
                                                 "2026-01-02T03:04:05.000000002Z stderr F err line",
                                                 "2026-01-02T03:04:05.000000003Z stdout P tail"]


async def test_stop_with_grace_then_restart_removes_the_old_instance(engine: FakeEngine, runtime: docker.DockerRuntime,
                                                                     tmp_path: Path) -> None:
    spec = {"name": "c", "image": "busybox", "command": ["sleep", "100"]}
    first = await runtime.start(spec, tmp_path, {}, tmp_path / "c.log", meta())
    assert first.returncode is None
    assert await runtime.stop(first, 2.5) == 143
    query, _ = engine.request("POST", f"/containers/{first.id}/stop")
    assert query == {"t": "3"}
    second = await runtime.start(spec, tmp_path, {}, tmp_path / "c.log", meta(restarts=1))
    assert engine.paths("DELETE") == [f"/containers/{first.id}"]
    assert list(engine.containers) == [second.id]
    assert engine.containers[second.id].name == "k8s_c_web_default_uid-1_1"
    await runtime.stop(second, 0)
    assert engine.request("POST", f"/containers/{second.id}/stop")[0] == {"t": "0"}


async def test_start_failure_is_an_error_and_leaves_nothing(engine: FakeEngine, runtime: docker.DockerRuntime,
                                                            tmp_path: Path) -> None:
    spec = {"name": "c", "image": "busybox", "volumeMounts": [{"name": "v", "mountPath": "/missing"}]}
    with pytest.raises(RuntimeError, match="/missing"):
        await runtime.start(spec, tmp_path, {}, tmp_path / "c.log", meta())
    assert engine.paths("POST") == []


async def test_recover_adopts_this_nodes_containers_by_label(engine: FakeEngine, tmp_path: Path) -> None:
    host = engine.host  # type: ignore[attr-defined]
    before = docker.DockerRuntime("n1", docker.Engine(host))
    other = docker.DockerRuntime("n2", docker.Engine(host))
    log_path = tmp_path / "run.log"
    engine.output = [(1, "2026-01-02T03:04:05.000000001Z", b"one\n")]
    running = await before.start({"name": "run", "image": "busybox"}, tmp_path, {"X": "1"}, log_path, meta("u1", 4))
    for _ in range(100):
        if log_path.exists() and log_path.read_text():
            break
        await asyncio.sleep(0.02)
    engine.exit_code = 7
    done = await before.start({"name": "done", "image": "busybox"}, tmp_path, {}, tmp_path / "done.log", meta("u2"))
    await other.start({"name": "theirs", "image": "busybox"}, tmp_path, {}, tmp_path / "theirs.log", meta("u3"))
    await before.close()  # the kubelet dies; the containers live on
    await other.close()
    engine.containers[running.id].output.append((1, "2026-01-02T03:04:06Z", b"two\n"))

    after = docker.DockerRuntime("n1", docker.Engine(host))
    await after.connect()
    try:
        found = {(c.meta.pod_uid, c.name): c for c in after.recover()}
        assert set(found) == {("u1", "run"), ("u2", "done")}
        query, _ = engine.request("GET", "/containers/json")
        assert query["all"] == "1"
        assert json.loads(query["filters"]) == {"label": ["io.kubernetes.pod.uid", "io.kubelab.node=n1"]}
        adopted = found[("u1", "run")]
        assert adopted.id == running.id and adopted.returncode is None and adopted.meta.restart_count == 4
        assert adopted.env["X"] == "1"
        assert found[("u2", "done")].returncode == 7
        engine.containers[running.id].exit(0)
        assert await asyncio.wait_for(adopted.wait(), 5) == 0
        assert log_path.read_text().splitlines() == ["2026-01-02T03:04:05.000000001Z stdout F one",
                                                     "2026-01-02T03:04:06Z stdout F two"]  # resumed, not repeated
        assert after.remove_pods({"u1"}) == ["u2"]
        await asyncio.wait(after._removals, timeout=5)
        assert f"/containers/{done.id}" in engine.paths("DELETE")
        assert running.id in engine.containers
    finally:
        await after.close()


async def test_exec_in_the_container(engine: FakeEngine, runtime: docker.DockerRuntime, tmp_path: Path) -> None:
    c = await runtime.start({"name": "c", "image": "busybox"}, tmp_path, {}, tmp_path / "c.log", meta())
    target = runtime.exec_target(c, ExecTarget({}, tmp_path, "127.0.0.1"))
    assert await run_exec(["cat", "/tmp/healthy"], target, 1) == (Result.SUCCESS, "cat /tmp/healthy\n")
    assert (await run_exec(["exit", "3"], target, 1))[0] is Result.FAILURE
    assert await run_exec(["nope"], target, 1) == (Result.FAILURE,
                                                    'exec: "nope": executable file not found in $PATH')
    _, body = engine.request("POST", f"/containers/{c.id}/exec")
    assert body == {"Cmd": ["cat", "/tmp/healthy"], "AttachStdin": False, "AttachStdout": True,
                    "AttachStderr": True, "Tty": False}


async def test_images_pull_events_and_node_images(engine: FakeEngine, tmp_path: Path) -> None:
    images = docker.DockerImages(tmp_path / "images", 1.0, engine=docker.Engine(engine.host))  # type: ignore
    events: list[tuple[str, str]] = []

    def record(pod: dict[str, Any], kind: str, reason: str, message: str, container: str | None = None) -> None:
        events.append((reason, message))

    pod = {"metadata": {"uid": "u1"}}
    try:
        assert await images.ensure(pod, {"name": "c", "image": "busybox:1.36"}, record) is None
        assert [r for r, _ in events] == ["Pulling", "Pulled"]
        assert events[1][1].endswith("Image size: 4300000 bytes.")
        query, _ = engine.request("POST", "/images/create")
        assert query == {"fromImage": "docker.io/library/busybox", "tag": "1.36"}
        assert images.present("docker.io/library/busybox:1.36") and not images.present("busybox:1.35")
        assert images.images() == [{"names": [f"busybox@sha256:{'b' * 64}", "busybox:1.36"], "sizeBytes": 4300000}]
        assert images.changed.is_set()
        events.clear()
        assert await images.ensure(pod, {"name": "c", "image": "busybox:1.36"}, record) is None
        assert events == [("Pulled", 'Container image "busybox:1.36" already present on machine')]
        failure = await images.ensure(pod, {"name": "c", "image": "nosuch:1"}, record)
        assert failure is not None and failure.reason == "ErrImagePull"
        assert "pull access denied for docker.io/library/nosuch" in failure.message
    finally:
        await images.engine.close()


async def test_no_engine(tmp_path: Path) -> None:
    rt = docker.DockerRuntime("n1", docker.Engine(f"unix://{tmp_path}/none.sock"))
    with pytest.raises(docker.EngineError, match="none.sock"):
        await rt.connect()
    await rt.close()
