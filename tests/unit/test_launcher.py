"""The `kubelab` launcher without a cluster: argument parsing, the command table, state.json, kubeconfig,
etcd discovery and command line, and process-group stopping (with plain `sleep`-like Python children)."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kubelab import cli, process
from kubelab import etcd as etcd_mod
from kubelab.cluster import stop_records
from kubelab.commands import COMMANDS, find_command
from kubelab.components import COMPONENTS, component_argv, kubelet_node_name
from kubelab.kubeconfig import write_kubeconfig
from kubelab.net import free_ports_from, port_in_use
from kubelab.state import ClusterState, ProcessRecord, load_state, save_state, state_path
from kubelab.table import format_duration, render_table

# ---- argument parsing ----------------------------------------------------------------------------


def test_up_defaults() -> None:
    command, args = cli.parse_args(["up"])
    assert command.name == "up"
    assert (args.nodes, args.port, args.data_dir, args.detach, args.etcd_binary) == (
        3,  # node01..node03: `make up` gives the walkthrough's three nodes
        8080,
        ".kubelab",
        False,
        None,
    )


def test_up_all_flags() -> None:
    _, args = cli.parse_args(
        ["up", "--nodes", "3", "--port", "18080", "--data-dir", "/tmp/x", "--detach", "--etcd-binary", "/e"]
    )
    assert (args.nodes, args.port, args.data_dir, args.detach, args.etcd_binary) == (
        3,
        18080,
        "/tmp/x",
        True,
        "/e",
    )


def test_up_proxy_mode() -> None:
    """kube-proxy's mode with the bridge pod network: auto unless asked (nftables where nft works, else iptables)."""
    assert cli.parse_args(["up"])[1].proxy_mode == "auto"
    assert cli.parse_args(["up", "--proxy-mode", "iptables"])[1].proxy_mode == "iptables"


@pytest.mark.parametrize("argv", [["up", "--nodes", "-1"], ["up", "--port", "0"], ["up", "--port", "x"],
                                  ["up", "--proxy-mode", "ipvs"]])
def test_up_rejects_bad_values(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["down", "status"])
def test_down_and_status_take_a_data_dir(name: str) -> None:
    _, args = cli.parse_args([name])
    assert args.data_dir == ".kubelab"
    _, args = cli.parse_args([name, "--data-dir", "d"])
    assert args.data_dir == "d"


def test_unknown_command_suggests_a_close_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["stauts"])
    assert exc.value.code == 2
    assert "did you mean 'status'" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command.name in out


def test_top_level_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "controller-manager" in capsys.readouterr().out


# ---- the command table ---------------------------------------------------------------------------


def test_every_command_module_has_its_entry_points() -> None:
    for command in COMMANDS:
        module = importlib.import_module(command.module)
        if command.passthrough:
            assert callable(module.run_passthrough), command.name
        else:
            assert callable(module.add_arguments) and callable(module.run), command.name


def test_every_component_is_a_passthrough_command() -> None:
    for name in COMPONENTS:
        command = find_command(name)
        assert command is not None and command.passthrough


def test_component_command_execs_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(os, "execv", lambda path, argv: calls.append((path, argv)))
    cli.main(["controller-manager", "--help", "--master", "http://x"])
    assert calls == [(sys.executable, [sys.executable, "-m", "controllers", "--help", "--master", "http://x"])]


def test_component_argv_and_node_names() -> None:
    assert component_argv(COMPONENTS["kubelet"], ["--node-name", "node01"]) == [
        sys.executable,
        "-m",
        "kubelet",
        "--node-name",
        "node01",
    ]
    assert [kubelet_node_name(i) for i in (1, 2, 10)] == ["node01", "node02", "node10"]


# ---- state.json and kubeconfig -------------------------------------------------------------------


def _state(tmp_path: Path) -> ClusterState:
    return ClusterState(
        data_dir=str(tmp_path),
        api_url="http://127.0.0.1:8080",
        etcd_url="http://127.0.0.1:2379",
        etcd_client_port=2379,
        etcd_peer_port=2380,
        kubeconfig=str(tmp_path / "kubeconfig"),
        supervisor_pid=123,
        supervisor_start_time=456,
        supervisor_log=str(tmp_path / "logs" / "supervisor.log"),
        detached=True,
        processes=[
            ProcessRecord("etcd", "etcd", 10, 1000, 1.5, "logs/etcd.log", 2379, "http://127.0.0.1:2379/health"),
            ProcessRecord("kubelet-node01", "kubelet", 11, None, 2.5, "logs/kubelet-node01.log", 10250,
                          restarts=2, last_exit_signal="SIGKILL", last_exit_at=2.0),
        ],
    )


def test_state_round_trip(tmp_path: Path) -> None:
    state = _state(tmp_path)
    save_state(tmp_path, state)
    assert load_state(tmp_path) == state
    assert not list(tmp_path.glob(".state.*"))  # the temp file was renamed, not left behind


def test_state_ignores_unknown_keys(tmp_path: Path) -> None:
    text = _state(tmp_path).to_json().replace('"supervisor_pid"', '"future_field": 1, "supervisor_pid"')
    state_path(tmp_path).write_text(text)
    assert load_state(tmp_path) == _state(tmp_path)


def test_state_of_a_launcher_before_the_supervisor_is_read(tmp_path: Path) -> None:
    """A state.json written by the previous launcher (``launcher_pid``): `down` still finds that launcher."""
    text = _state(tmp_path).to_json().replace('"supervisor_pid"', '"launcher_pid"')
    text = text.replace('"supervisor_start_time"', '"launcher_start_time"')
    state_path(tmp_path).write_text(text)
    loaded = load_state(tmp_path)
    assert loaded is not None and (loaded.supervisor_pid, loaded.supervisor_start_time) == (123, 456)


def test_missing_or_corrupt_state_is_none(tmp_path: Path) -> None:
    assert load_state(tmp_path) is None
    state_path(tmp_path).write_text("{not json")
    assert load_state(tmp_path) is None


def test_kubeconfig(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:18080")
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "kubelab"
    assert config["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:18080"
    assert config["contexts"][0]["context"]["cluster"] == "kubelab"
    assert path.stat().st_mode & 0o077 == 0


# ---- etcd discovery and command line -------------------------------------------------------------


def test_find_etcd_explicit_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        etcd_mod.find_etcd(str(tmp_path / "nope"))


def test_find_etcd_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, on_path = (tmp_path / n for n in ("explicit", "env", "bin"))
    for p in (explicit, env):
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    on_path.mkdir()
    (on_path / "etcd").write_text("#!/bin/sh\n")
    (on_path / "etcd").chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setenv("KUBELAB_ETCD", str(env))
    assert etcd_mod.find_etcd(str(explicit)) == str(explicit)
    assert etcd_mod.find_etcd() == str(env)
    monkeypatch.delenv("KUBELAB_ETCD")
    assert etcd_mod.find_etcd() == str(on_path / "etcd")


def test_find_etcd_advice_when_nothing_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBELAB_ETCD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(etcd_mod, "_distro_binary", lambda: None)
    with pytest.raises(FileNotFoundError, match="apt-get install -y etcd-server"):
        etcd_mod.find_etcd()


def test_etcd_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "etcd"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    server = etcd_mod.EtcdServer(tmp_path / "data", binary=str(binary), client_port=12379, peer_port=12380)
    assert server.url == "http://127.0.0.1:12379"
    assert server.pid is None
    monkeypatch.setattr(etcd_mod, "supports_flag", lambda b, f: True)
    monkeypatch.delenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", raising=False)
    cmd = server.command()
    flags = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert flags["--listen-client-urls"] == flags["--advertise-client-urls"] == "http://127.0.0.1:12379"
    assert flags["--initial-cluster"] == "default=" + flags["--initial-advertise-peer-urls"]
    assert flags["--listen-peer-urls"] == "http://127.0.0.1:12380"
    assert "--unsafe-no-fsync" not in cmd
    monkeypatch.setenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    assert "--unsafe-no-fsync" in server.command()
    monkeypatch.setattr(etcd_mod, "supports_flag", lambda b, f: False)  # etcd 3.4 has no such flag
    assert "--unsafe-no-fsync" not in server.command()
    assert flags["--quota-backend-bytes"] == str(8 * 1024**3)
    small = etcd_mod.EtcdServer(tmp_path / "data", binary=str(binary), quota_backend_bytes=2 * 1024**2)
    assert small.command()[small.command().index("--quota-backend-bytes") + 1] == str(2 * 1024**2)


def test_up_etcd_quota_flag() -> None:
    assert cli.parse_args(["up"])[1].etcd_quota_backend_bytes == 8 * 1024**3
    assert cli.parse_args(["up", "--etcd-quota-backend-bytes", "2147483648"])[1].etcd_quota_backend_bytes == 2 * 1024**3


def test_free_ports() -> None:
    port = etcd_mod.free_port()
    assert not port_in_use(port)
    ports = free_ports_from(port, 2, avoid={port})
    assert len(ports) == 2 and port not in ports and ports == sorted(ports)


# ---- processes -----------------------------------------------------------------------------------

STUBBORN = (
    "import signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print('stubborn' + ' and ready', flush=True)\n"
    "time.sleep(60)\n"
)


def _wait_for_line(log: Path, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.02)


def test_stop_group_kills_a_process_that_ignores_sigterm_and_its_children(tmp_path: Path) -> None:
    log = tmp_path / "stubborn.log"
    spawned = process.spawn("stubborn", [sys.executable, "-c", STUBBORN], log)
    _wait_for_line(log, "stubborn and ready")  # not in the command line the log starts with
    assert os.getpgid(spawned.pid) == spawned.pid  # its own process group
    assert process.pid_alive(spawned.pid, spawned.start_time)
    began = time.monotonic()
    assert process.stop_group(spawned.pid, spawned.start_time, timeout=0.5)
    assert 0.4 < time.monotonic() - began < 6
    assert spawned.exit_code() is not None
    assert process.group_members(spawned.pid) == []  # the grandchild went with the group


def test_stop_group_resumes_a_stopped_process_so_it_handles_sigterm(tmp_path: Path) -> None:
    """A frozen component (``kill -STOP``, as the walkthrough does to a kubelet) still gets its clean shutdown."""
    log = tmp_path / "graceful.log"
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *_: (print('clean', 'shutdown', flush=True), sys.exit(0)))\n"
              "print('graceful', 'and ready', flush=True)\n"
              "time.sleep(60)\n")
    spawned = process.spawn("graceful", [sys.executable, "-c", script], log)
    _wait_for_line(log, "graceful and ready")  # the texts are split in the script, which the log's header holds
    os.kill(spawned.pid, signal.SIGSTOP)
    assert process.stop_group(spawned.pid, spawned.start_time, timeout=5)
    assert spawned.exit_code() is not None
    assert "clean shutdown" in log.read_text()  # its SIGTERM handler ran: it was not simply SIGKILLed


def test_descendants_finds_children_of_children(tmp_path: Path) -> None:
    log = tmp_path / "stubborn.log"
    spawned = process.spawn("stubborn", [sys.executable, "-c", STUBBORN], log)
    try:
        _wait_for_line(log, "stubborn and ready")
        tree = process.descendants(os.getpid())
        assert tree[spawned.pid] == spawned.start_time
        below = process.descendants(spawned.pid)
        assert len(below) == 1 and set(below) < set(tree)  # the grandchild the stubborn process started
    finally:
        process.stop_group(spawned.pid, spawned.start_time, timeout=0.5)
    assert spawned.exit_code() is not None
    assert spawned.pid not in process.descendants(os.getpid())


def test_pid_alive_rejects_a_reused_pid(tmp_path: Path) -> None:
    spawned = process.spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log")
    try:
        assert process.pid_alive(spawned.pid)
        if spawned.start_time is not None:
            assert not process.pid_alive(spawned.pid, spawned.start_time + 1)
            assert not process.stop_group(spawned.pid, spawned.start_time + 1)  # not ours: untouched
            assert spawned.exit_code() is None
    finally:
        process.stop_group(spawned.pid, timeout=5)
    assert spawned.exit_code() is not None
    assert not process.pid_alive(spawned.pid)


def test_stop_records_goes_clients_then_apiserver_then_etcd(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[int]] = []

    def fake_stop_groups(targets: list[tuple[int, int | None]], timeout: float) -> list[int]:
        calls.append([pid for pid, _ in targets])
        return [pid for pid, _ in targets]

    monkeypatch.setattr(process, "stop_groups", fake_stop_groups)
    records = [
        ProcessRecord(name, component, pid, None, 0.0, "log")
        for name, component, pid in [
            ("etcd", "etcd", 1),
            ("apiserver", "apiserver", 2),
            ("controller-manager", "controller-manager", 3),
            ("scheduler", "scheduler", 4),
            ("kubelet-node01", "kubelet", 5),
        ]
    ]
    stopped = stop_records(records)
    assert calls == [[5, 4, 3], [2], [1]]
    assert [r.pid for r in stopped] == [5, 4, 3, 2, 1]


def test_tail(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert process.tail(log, 2) == "line 98\nline 99"
    assert process.tail(tmp_path / "missing.log") == ""


# ---- output --------------------------------------------------------------------------------------


def test_render_table() -> None:
    text = render_table(("COMPONENT", "PID"), [("etcd", "1"), ("kubelet-node01", "22")])
    assert text.splitlines() == ["COMPONENT        PID", "etcd             1", "kubelet-node01   22"]


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59.9, "59s"), (192, "3m12s"), (7500, "2h5m"), (3 * 86400 + 4 * 3600, "3d4h")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_python_m_kubelab_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kubelab", "status", "--data-dir", "/nonexistent-kubelab"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "kubelab is not running" in done.stdout


def test_encryption_config_is_written_once_and_loads(tmp_path: Path) -> None:
    from apiserver.storage import encryptionconfig
    from kubelab.encryption import ensure_encryption_config

    path = ensure_encryption_config(tmp_path / "data")
    first = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert ensure_encryption_config(tmp_path / "data").read_text() == first  # the key outlives restarts
    assert ensure_encryption_config(tmp_path / "other").read_text() != first  # a fresh key per data dir
    assert encryptionconfig.load(path).transformer_for("", "secrets") is not None


def test_stop_records_stops_etcd_members_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped together, an etcd leader waits out etcd's request timeout handing leadership to a member that is
    stopping too; in turn, each hands it on at once."""
    calls: list[list[int]] = []

    def fake_stop_groups(targets: list[tuple[int, int | None]], timeout: float) -> list[int]:
        calls.append([pid for pid, _ in targets])
        return [pid for pid, _ in targets]

    monkeypatch.setattr(process, "stop_groups", fake_stop_groups)
    records = [ProcessRecord(name, component, pid, None, 0.0, "log") for name, component, pid in
               [("etcd-0", "etcd", 1), ("etcd-1", "etcd", 2), ("etcd-2", "etcd", 3), ("apiserver", "apiserver", 4)]]
    stop_records(records)
    assert calls == [[4], [3], [2], [1]]
