"""docs/walkthrough.md and docs/zh/walkthrough.md, every command in order, each page against the `kubelab up
--nodes 3` it starts itself, with the real kubectl.

The two pages run the same commands in the same order (the Chinese one groups them by the tutorial's own sections,
and draws the trace with Chinese labels: ``test_both_pages_run_the_same_commands_but_the_diagram``), so one table of
checks serves both, keyed by command line and occurrence. Each page runs on a cluster of its own, and the two
clusters run the two runtimes (RUNTIME): the English page the default (``auto``: the linux runtime and the bridge
pod network where the host allows them, as root), the Chinese one ``--runtime process`` (plain processes on the
host's network), so that every command of each page is run and the walkthrough is shown on both runtimes without a
third run. Where what a command shows depends on the runtime (the pods' IPs and the nodes' pod CIDRs), the check
follows the runtime and pod network the cluster really runs, which ``kubelab status`` names and the test asserts.
The commands are read
from the page itself (its ``sh`` blocks) and run as a user's shell runs them: in a directory with ``examples/``,
with ``kubectl`` and ``kubelab`` on PATH and ``KUBECONFIG`` pointing at the cluster, ``POD=$(...)`` carried to later
commands. After each one the test checks what the page says the user
sees, polling where the page says "within seconds". Only these are run differently, each for a stated reason:
``make setup`` runs in the repository (the work directory stands in for the clone, its ``.venv`` the virtualenv
running the tests), ``. .venv/bin/activate`` is carried to later commands as the user's shell carries it (until then
no kubelab command is on PATH, as on a fresh clone),
``kubelab up`` is started ``--detach`` on a free port (the test cannot leave a foreground process or take 8080),
and on the Chinese page's cluster with ``--runtime process`` (above; the page itself says what that runtime shows),
the watch (the page's second terminal) runs in the background and is stopped once it has shown the flow
(the user presses Ctrl-C), so does the kopf operator (stopped once its ConfigMap has been garbage-collected),
``exec -it`` is fed its input (no terminal), ``debug -it`` is typed into once kubectl says it is attached
(``Shell.typed``), and the kubelet's pid comes from ``.kubelab/state.json`` instead of ``pgrep`` (a test must
not signal processes by name).

``test_every_walkthrough_command_has_a_check`` keeps the pages and this module in step and always runs. The
sequence diagrams the pages embed (docs/img/creation-flow*.svg) are drawn by ``kubelab trace --svg`` during each
page's run; ``KUBELAB_WRITE_DOC_ASSETS=1`` copies the run's diagrams over them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import KUBECTL, ROOT
from kubelab.commands import tracesvg
from kubelab.etcd import free_port
from kubelab.runtimechoice import Choice, choose
from kubelab.state import load_state

pytestmark = pytest.mark.kubectl

DOCS = {"en": ROOT / "docs" / "walkthrough.md", "zh": ROOT / "docs" / "zh" / "walkthrough.md"}
# Section headings: the English page numbers its sections, the Chinese one uses the tutorial's own numerals.
HEADINGS = {"en": r"## (\d+)\.|## (Clean up)", "zh": r"## ([一二三四五六七八九十]+)、|## (清理)"}
SECTIONS = {"en": ["0", "1", "2", "3", "4", "5", "6", "7", "8", "Clean up"],
            "zh": ["一", "二", "三", "四", "五", "六", "七", "八", "清理"]}
# The runtime each page's cluster runs (`kubelab up --runtime`; see the module docstring).
RUNTIME = {"en": "auto", "zh": "process"}
ASSETS = ROOT / "docs" / "img"
Result = subprocess.CompletedProcess[str]
# Pod IPs by pod network: 10.244.0.0/16 on the bridge (`kubelab up`'s default as root), 127.16.0.0/12 on the host's
POD_IPS = {"bridge": "10.244.", "host": "127.16."}


# ---- the page --------------------------------------------------------------------------------------------


def doc_sections(lang: str = "en") -> dict[str, list[str]]:
    """Section (``SECTIONS[lang]``) -> the command lines of its ``sh`` blocks, in order."""
    sections: dict[str, list[str]] = {}
    current, fenced = "", False
    for line in DOCS[lang].read_text().splitlines():
        heading = re.match(HEADINGS[lang], line)
        if heading and not fenced:
            current = heading.group(1) or heading.group(2)
            sections[current] = []
        elif line.startswith("```"):
            fenced = line.strip() == "```sh"
        elif fenced and line.strip() and not line.lstrip().startswith("#"):
            sections[current].append(line.strip())
    return sections


def table(out: str) -> list[dict[str, str]]:
    """kubectl's columns by header position (headers like ``NOMINATED NODE`` contain one space)."""
    lines = [line for line in out.splitlines() if line.strip()]
    if not lines:
        return []
    names = re.split(r"\s{2,}", lines[0].strip())
    starts: list[int] = []
    for n in names:  # left to right: AGE is also the end of MESSAGE
        starts.append(lines[0].index(n, starts[-1] + 1 if starts else 0))
    bounds = list(zip(starts, starts[1:] + [None], strict=True))
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)} for line in lines[1:]]


# ---- running commands like a user's shell ----------------------------------------------------------------


class Shell:
    """bash in a work directory; ``NAME=$(...)`` lines set variables that later commands see. ``lang``: the page
    it runs; ``choice``: the runtime and pod network its ``kubelab up`` is expected to choose."""

    def __init__(self, workdir: Path, env: dict[str, str], lang: str, choice: Choice) -> None:
        self.workdir, self.env, self.lang, self.choice = workdir, env, lang, choice
        self.vars: dict[str, str] = {}
        self.notes: dict[str, object] = {}  # what one check remembers for a later one

    def run(self, line: str, input: str | None = None, timeout: float = 120) -> Result:
        assign = re.fullmatch(r"(\w+)=\$\((.*)\)", line)
        result = self._bash(assign.group(2) if assign else line, input, timeout)
        if assign:
            self.vars[assign.group(1)] = result.stdout.strip()
        return result

    def _bash(self, command: str, input: str | None, timeout: float) -> Result:
        script = self.workdir / "step.sh"  # bash script.sh: the command text is not in bash's own argv
        script.write_text(command + "\n")
        return subprocess.run(["bash", str(script)], cwd=self.workdir, env={**self.env, **self.vars}, input=input,
                              capture_output=True, text=True, timeout=timeout)

    def typed(self, line: str, text: str, after: str, timeout: float = 120) -> Result:
        """Run ``line`` and type ``text`` once its stderr shows ``after`` (as a user types at a prompt), leaving
        stdin open until it exits; its output as ``run`` gives it."""
        script = self.workdir / "step.sh"
        script.write_text(line + "\n")
        out: list[str] = []
        with subprocess.Popen(["bash", str(script)], cwd=self.workdir, env={**self.env, **self.vars}, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
            assert stdin is not None and stdout is not None and stderr is not None
            reader = threading.Thread(target=lambda: out.append(stdout.read()), daemon=True)
            reader.start()
            err = ""
            while after not in err and (chunk := stderr.readline()):
                err += chunk
            stdin.write(text)
            stdin.flush()
            try:
                code = proc.wait(timeout)
            finally:
                proc.kill()
            err += stderr.read()
            reader.join(timeout)
        return subprocess.CompletedProcess(line, code, "".join(out), err)

    def pid_of(self, name: str) -> int:
        state = load_state(self.workdir / ".kubelab")
        assert state is not None
        return next(r.pid for r in state.processes if r.name == name)


Check = Callable[[Shell, str, Result], None]


def eventually(shell: Shell, line: str, result: Result, ok: Callable[[str], bool], timeout: float = 90) -> str:
    """Re-run ``line`` until its output satisfies ``ok`` (the page's "within seconds")."""
    deadline = time.monotonic() + timeout
    while not (result.returncode == 0 and ok(result.stdout)):
        assert time.monotonic() < deadline, (
            f"`{line}` never showed what docs/walkthrough.md says; last output:\n{result.stdout}{result.stderr}")
        time.sleep(1)
        result = shell.run(line)
    return result.stdout


def prints(*texts: str) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        assert result.returncode == 0, result.stderr
        for text in texts:
            assert text in result.stdout, f"`{line}` printed:\n{result.stdout}"
    return check


def shows(ok: Callable[[list[dict[str, str]]], bool], timeout: float = 90) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        eventually(shell, line, result, lambda out: ok(table(out)), timeout)
    return check


def shows_text(ok: Callable[[str], bool], timeout: float = 90) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        eventually(shell, line, result, ok, timeout)
    return check


def running(rows: list[dict[str, str]], prefix: str = "") -> list[dict[str, str]]:
    return [r for r in rows if r["NAME"].startswith(prefix) and r["STATUS"] == "Running"]


def on(rows: list[dict[str, str]], name: str) -> str | None:
    return next((r.get("NODE") for r in rows if r["NAME"] == name and r["STATUS"] == "Running"), None)


def node_status(rows: list[dict[str, str]]) -> dict[str, str]:
    return {r["NAME"]: r["STATUS"] for r in rows}


def fails_with(*texts: str) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        assert result.returncode != 0, f"`{line}` should have been refused:\n{result.stdout}"
        for text in texts:
            assert text in result.stdout + result.stderr, f"`{line}`:\n{result.stdout}{result.stderr}"
    return check


def warns(*texts: str) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        for text in texts:
            assert text in result.stderr, f"`{line}` warned:\n{result.stderr}"
    return check


def remember(key: str, value: Callable[[Shell, Result], object]) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        assert result.returncode == 0, result.stderr
        shell.notes[key] = value(shell, result)
    return check


def both(*checks: Check) -> Check:
    def check(shell: Shell, line: str, result: Result) -> None:
        for c in checks:
            c(shell, line, result)
    return check


# ---- commands run differently (see the module docstring) -----------------------------------------------


def setup_in_clone(shell: Shell, line: str) -> Result:
    """``make setup`` in the repository: the virtualenv the tests run in is the one it made (and keeps)."""
    return shell.run(f"make -C {ROOT} setup", timeout=600)


def activate(shell: Shell, line: str) -> Result:
    """Source the activation script and keep what it exported (PATH, VIRTUAL_ENV) for the commands after it."""
    result = shell.run(f"{line} && env -0")
    if result.returncode == 0:
        exported = dict(item.split("=", 1) for item in result.stdout.split("\0") if "=" in item)
        shell.env.update({k: exported[k] for k in ("PATH", "VIRTUAL_ENV")})
    return result


def activated(shell: Shell, line: str, result: Result) -> None:
    """kubelab and kopf now come from .venv."""
    assert result.returncode == 0, result.stderr
    found = shell.run("command -v kubelab kopf").stdout.split()
    venv = Path(shell.env["VIRTUAL_ENV"]).resolve()
    assert [Path(f).resolve().parent for f in found] == [venv / "bin"] * 2, found


def up_detached(shell: Shell, line: str) -> Result:
    runtime = "" if RUNTIME[shell.lang] == "auto" else f" --runtime {RUNTIME[shell.lang]}"
    return shell.run(line.replace("kubelab up", f"kubelab up --detach --port {free_port()}{runtime}"), timeout=180)


class Watch:
    """A command left running in a second terminal: its output lines as they come, stopped with Ctrl-C."""

    def __init__(self, shell: Shell, line: str) -> None:
        self.proc = subprocess.Popen(["bash", "-c", line], cwd=shell.workdir, env={**shell.env, **shell.vars},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for out in self.proc.stdout:
            with self.changed:
                self.lines.append(out)
                self.changed.notify_all()

    def wait_for(self, ok: Callable[[list[str]], bool], timeout: float = 120) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: ok(self.lines), timeout)

    def stop(self) -> str:
        self.proc.terminate()
        self.proc.communicate(timeout=10)
        return "".join(self.lines)


def start_watch(shell: Shell, line: str) -> Result:
    """The page's second terminal: the watch keeps running while the next commands are typed."""
    watch = Watch(shell, line)
    shell.notes["watch"] = watch
    time.sleep(0.5)  # kubectl is up and watching before the next command
    if watch.proc.poll() is None:
        return subprocess.CompletedProcess(line, 0, "", "")
    shell.notes.pop("watch")
    _, err = watch.proc.communicate(timeout=10)
    return subprocess.CompletedProcess(line, watch.proc.returncode, "".join(watch.lines), err)


def watched_flow(shell: Shell, line: str, result: Result) -> None:
    """What the watch showed (stopped once three web pods were Running): each pod Pending, bound, Running."""
    watch = shell.notes.pop("watch")
    assert isinstance(watch, Watch)

    def running_pods(lines: list[str]) -> set[str]:
        return {row.split()[0] for row in lines if " Running " in row and row.startswith("web-")}

    watch.wait_for(lambda lines: len(running_pods(lines)) >= 3)
    out = watch.stop()
    rows = [row.split() for row in out.splitlines() if row.startswith("web-")]
    assert len(running_pods(out.splitlines())) == 3, f"the watch showed:\n{out}"
    for pod in running_pods(out.splitlines()):
        states = [(r[2], r[6]) for r in rows if r[0] == pod]  # (STATUS, NODE)
        assert states[0] == ("Pending", "<none>"), f"{pod} was not first seen unscheduled:\n{out}"
        assert any(status == "Pending" and node.startswith("node") for status, node in states) or \
            any(status == "ContainerCreating" for status, _ in states), f"{pod} was not seen bound:\n{out}"


def start_operator(shell: Shell, line: str) -> Result:
    """The page's other terminal: the operator runs while the next commands are typed (its log read as it comes)."""
    operator = Watch(shell, f"exec {line} 2>&1")
    shell.notes["operator"] = operator
    return subprocess.CompletedProcess(line, 0 if operator.proc.poll() is None else 1, "", "")


def operator_handled(shell: Shell, line: str, result: Result) -> None:
    operator = shell.notes["operator"]
    assert isinstance(operator, Watch)
    assert operator.wait_for(lambda lines: any("Handler 'create_fn' succeeded." in row for row in lines), 90), \
        f"the operator logged:\n{''.join(operator.lines)}"


def stop_operator(shell: Shell, line: str, result: Result) -> None:
    operator = shell.notes.pop("operator")
    assert isinstance(operator, Watch)
    operator.stop()


def exec_with_input(shell: Shell, line: str) -> Result:
    return shell.run(line, input="echo hello from the pod\nexit\n")


def debug_with_input(shell: Shell, line: str) -> Result:
    """Typed once kubectl says the debugger is attached: a shell on a terminal discards what was typed before it
    set the terminal up, and the end of kubectl's stdin would end the attach before the output came back."""
    return shell.typed(line, "echo hello from the debugger\nexit\n", after="If you don't see a command prompt")


def signal_kubelet(shell: Shell, line: str) -> Result:
    pid = shell.pid_of("kubelet-node03")
    return shell.run(line.replace("$(pgrep -f -- '--node-name node03')", str(pid)))


SPECIAL: dict[str, Callable[[Shell, str], Result]] = {
    "make setup": setup_in_clone,
    ". .venv/bin/activate": activate,
    "kubelab up --nodes 3": up_detached,
    "kubectl get pods -o wide -w": start_watch,
    "kubectl exec -it $POD -- sh": exec_with_input,
    "kubectl debug -it $POD --image=busybox -- sh": debug_with_input,
    "kill -STOP $(pgrep -f -- '--node-name node03')": signal_kubelet,
    "kill -CONT $(pgrep -f -- '--node-name node03')": signal_kubelet,
    "kopf run --standalone --namespace default examples/kopf-operator/operator.py": start_operator,
}

def trace_observed(shell: Shell, line: str, result: Result) -> None:
    """The pod was stored (7), bound (10) and reported Running (13), each at a revision; the kubelet's
    container events (12c Created, 12d Started) were found by their fieldPath; every step but the kubelet's heading
    (12) has a latency in milliseconds (from the audit log `kubelab up` writes and the apiserver's deliveries), and
    the critical path from the RC's create to Running is their exact sum, as the page says."""
    rows = {row.split()[0]: row for row in result.stdout.splitlines() if re.match(r"\d+[a-z]? ", row)}
    for step in ("7", "10", "13"):
        assert "not observed" not in rows[step] and re.search(r"\s\d+\s+\S+$", rows[step]), result.stdout
    for step in ("12c", "12d"):
        assert "not observed" not in rows[step], result.stdout
    for step in (*map(str, range(1, 12)), "13"):  # each its own latency from exact times (audit log, deliveries)
        assert re.search(r"\s[+-]\d+\.(\dms|\d{3}s)$", rows[step]), result.stdout
    assert re.search(r"^critical path: step 2 -> step 13: \d+\.\dms \(exact;", result.stdout, re.M), result.stdout


def diagram(name: str, lang: str, asset: str) -> Check:
    """``kubelab trace --svg`` drew the flow: valid SVG naming the six components, one arrow per hop, each with its
    latency; rendered by headless Chromium where it is installed; copied into docs/img with KUBELAB_WRITE_DOC_ASSETS."""
    def check(shell: Shell, line: str, result: Result) -> None:
        assert result.returncode == 0, result.stderr
        path = shell.workdir / name
        svg = path.read_text(encoding="utf-8")
        root = ElementTree.fromstring(svg)
        ns = "{http://www.w3.org/2000/svg}"
        lifelines = [t.text or "" for t in root.iter(f"{ns}text") if t.get("class") == "lifeline"]
        assert len(lifelines) == 6 and lifelines[-1].startswith("kubelet (node0"), lifelines
        assert lifelines[:5] == {"en": ["client (kubectl)", "kube-apiserver", "etcd", "controller-manager",
                                        "scheduler"],
                                 "zh": ["客户端 (kubectl)", "APIServer", "etcd", "Controller Manager",
                                        "Scheduler"]}[lang]
        hops = [g for g in root.iter(f"{ns}g") if "hop" in (g.get("class") or "")]
        steps = [g.get("data-step") for g in hops]
        assert steps[:12] == ["1", "1", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"] and steps[-1] == "13"
        latencies = [t.text or "" for g in hops for t in g.iter(f"{ns}tspan")]
        assert len(latencies) == len(hops) - 2  # one per hop; step 1's three watches share one (how long to open)
        exact = [t for t in latencies if re.fullmatch(r"[+–]\d+\.(\dms|\d{3}s)", t)]
        assert len(exact) >= len(latencies) - 1, latencies  # all in ms from exact times (the step 12a pull: n/a)
        if shutil.which("chromium"):  # headless Chromium draws it (not librsvg, even where both are installed)
            png = path.with_suffix(".png")
            tracesvg.to_png(svg, png, browser_only=True)
            assert png.stat().st_size > 20_000, "the rendered diagram is (nearly) blank"
        if os.environ.get("KUBELAB_WRITE_DOC_ASSETS"):
            ASSETS.mkdir(exist_ok=True)
            shutil.copyfile(path, ASSETS / asset)
    return check


def cordon_respected(shell: Shell, line: str, result: Result) -> None:
    """Four web pods run, and none of the new ones went to the cordoned node02."""
    before = shell.notes["web-on-node02"]
    eventually(shell, line, result, lambda out: len(running(table(out), "web-")) == 4
               and len([r for r in table(out) if r["NODE"] == "node02"]) <= before)  # type: ignore[operator]


NODES = ("node01", "node02", "node03")
ALL_READY = shows(lambda rows: all(node_status(rows).get(n) == "Ready" for n in NODES))


def job_pods_deleted(shell: Shell, line: str, result: Result) -> None:
    """The garbage collector deletes a deleted Job's pods (kubectl's default propagation is background)."""
    pods = "kubectl get pods -l job-name=count"
    eventually(shell, pods, shell.run(pods), lambda out: "count-" not in out, timeout=60)


def web_nodes(shell: Shell, result: Result) -> set[str]:
    return {r["NODE"] for r in running(table(result.stdout), "web-")}


def runtime_shown(shell: Shell, line: str, result: Result) -> None:
    """``kubelab status`` names the container runtime every node runs (its Node's containerRuntimeVersion:
    ``linux://…`` or ``process://…``) and the runtime and pod network ``kubelab up`` chose: those the page's cluster
    is meant to run (RUNTIME, resolved on this host as ``kubelab up`` resolves it)."""
    runtime, network = shell.choice.runtime, shell.choice.pod_network
    out = eventually(shell, line, result, lambda out: all(f"{n} {runtime}://" in out for n in NODES))
    assert f"; runtime: {runtime} (" in out and f", pod network: {network}" in out, out


def shows_ips(ok: Callable[[list[dict[str, str]], str], bool]) -> Check:
    """``shows`` for what depends on the pod network the cluster runs: ``ok`` also gets its pod IPs' prefix."""
    def check(shell: Shell, line: str, result: Result) -> None:
        prefix = POD_IPS[shell.choice.pod_network]
        eventually(shell, line, result, lambda out: ok(table(out), prefix))
    return check


# ---- what each command shows, per the page (a list where a command occurs more than once) ----------------

CHECKS: dict[str, list[Check]] = {
    # 0
    "make setup": [prints("etcd: ")],
    ". .venv/bin/activate": [activated],
    "kubelab up --nodes 3": [prints("kubelab is up")],
    "kubectl get nodes": [
        ALL_READY,  # 0
        shows(lambda rows: node_status(rows).get("node03") == "NotReady", timeout=150),  # 5: heartbeat stopped
        ALL_READY,  # 5: resumed
        ALL_READY,  # 6
        shows(lambda rows: node_status(rows).get("node02") == "Ready,SchedulingDisabled"),  # 7: cordoned
        ALL_READY,  # 7: uncordoned
    ],
    "kubelab status": [both(shows_text(lambda out: all(
        re.search(rf"^{name}\s+\d+\s+\S+\s+(ok|running)\s", out, re.M)
        for name in ("etcd", "apiserver", "controller-manager", "scheduler", *(f"kubelet-{n}" for n in NODES)))),
        runtime_shown)],
    # 1
    "kubectl get pods -o wide -w": [prints()],  # its output is checked once the RC exists
    "kubectl apply -f examples/01-creation-flow/rc-web.yaml": [both(prints("replicationcontroller/web created"),
                                                                    watched_flow)],
    "kubectl get rc web": [shows(lambda rows: [rows[0]["DESIRED"], rows[0]["CURRENT"], rows[0]["READY"]]
                                 == ["3", "3", "3"])],
    "POD=$(kubectl get pods -l app=web -o jsonpath='{.items[0].metadata.name}')": [
        lambda shell, line, result: None if shell.vars["POD"].startswith("web-") else pytest.fail(shell.vars["POD"]),
    ] * 2,
    "kubelab trace pod $POD": [both(
        prints("controlled by: ReplicationController/web", "SuccessfulCreate", "event Scheduled"), trace_observed)],
    "kubelab trace pod $POD --svg flow.svg": [diagram("flow.svg", "en", "creation-flow.svg")],
    "kubelab trace pod $POD --svg flow-zh.svg --lang zh": [diagram("flow-zh.svg", "zh", "creation-flow-zh.svg")],
    "kubectl scale rc web --replicas=5": [prints("replicationcontroller/web scaled")],
    "kubectl get pods -l app=web -o wide": [
        shows_ips(lambda rows, ips: len(running(rows, "web-")) == 5  # 1: scaled to 5, each pod with its own IP
                  and len({r["IP"] for r in running(rows, "web-") if r["IP"].startswith(ips)}) == 5),
        remember("web-nodes", web_nodes),  # 3: where the web pods run (two of them)
        shows(lambda rows: len(running(rows, "web-")) == 2 and all(r["NODE"] != "node01" for r in rows
                                                                  if r["NAME"].startswith("web-"))),  # 4
        cordon_respected,  # 7: scaled to 4 while node02 is cordoned
    ],
    "kubectl get nodes -o custom-columns=NAME:.metadata.name,POD-CIDR:.spec.podCIDR": [shows_ips(
        lambda rows, ips: sorted(r["NAME"] for r in rows) == ["node01", "node02", "node03"]
        and len({r["POD-CIDR"] for r in rows if r["POD-CIDR"].startswith(ips)}) == 3)],
    "kubectl scale rc web --replicas=2": [prints("replicationcontroller/web scaled")],
    "kubectl get pods -l app=web": [shows(lambda rows: len(rows) == 2 and len(running(rows)) == 2)],
    # 2
    "kubectl apply -f examples/02-node-selection/pod-nodename.yaml": [prints("pod/pinned created")],
    "kubectl get pod pinned -o wide": [shows(lambda rows: on(rows, "pinned") == "node01")],
    "kubectl describe pod pinned": [both(prints("node01"), shows_text(
        lambda out: "Started" in out and "Scheduled" not in out.split("Events:")[-1]))],
    "kubectl label --help": [prints("Update the labels on a resource.")],
    "kubectl get node": [ALL_READY],
    "kubectl label nodes node01 feng=a": [prints("node/node01 labeled")],
    "kubectl label nodes node02 feng=b": [prints("node/node02 labeled")],
    "kubectl get nodes --show-labels": [shows(lambda rows: "feng=a" in next(
        r["LABELS"] for r in rows if r["NAME"] == "node01"))],
    "kubectl get node -l feng=a": [shows(lambda rows: [r["NAME"] for r in rows] == ["node01"])],
    "kubectl apply -f examples/02-node-selection/pod-nodeselector.yaml": [prints("pod/selected created")],
    "kubectl get pod selected -o wide": [shows(lambda rows: on(rows, "selected") == "node01")],
    # 3
    "kubectl label nodes node01 rank=1": [prints("node/node01 labeled")],
    "kubectl label nodes node02 rank=2": [prints("node/node02 labeled")],
    "kubectl label nodes node03 rank=3": [prints("node/node03 labeled")],
    "kubectl apply -f examples/03-affinity/node-affinity-required.yaml": [prints("pod/affinity-required created")],
    "kubectl get pod affinity-required -o wide": [shows(lambda rows: on(rows, "affinity-required") == "node02")],
    "kubelab explain pod affinity-required": [prints(
        "Scheduled on node02", "node01   NodeAffinity: node(s) didn't match Pod's node affinity/selector",
        "node03   NodeAffinity: node(s) didn't match Pod's node affinity/selector")],
    "kubectl apply -f examples/03-affinity/node-affinity-preferred.yaml": [prints("pod/affinity-preferred created")],
    "kubectl get pod affinity-preferred -o wide": [shows(lambda rows: on(rows, "affinity-preferred") == "node01")],
    "kubectl apply -f examples/03-affinity/pod-affinity.yaml": [prints("pod/with-web created")],
    "kubectl get pod with-web -o wide": [
        lambda shell, line, result: eventually(shell, line, result, lambda out: on(table(out), "with-web")
                                               in shell.notes["web-nodes"]),  # type: ignore[operator]
    ],
    "kubectl apply -f examples/03-affinity/pod-anti-affinity.yaml": [prints("replicationcontroller/cache created")],
    "kubectl get pods -l app=cache -o wide": [shows(lambda rows: len(running(rows)) == 3
                                                     and len({r["NODE"] for r in rows}) == 3)],
    "kubectl scale rc cache --replicas=4": [prints("replicationcontroller/cache scaled")],
    "kubectl get pods -l app=cache": [shows(lambda rows: sorted(r["STATUS"] for r in rows)
                                            == ["Pending", "Running", "Running", "Running"])],
    "kubectl get events --field-selector reason=FailedScheduling": [shows_text(
        lambda out: "didn't match pod anti-affinity rules" in out)],
    "kubectl delete rc cache": [prints('replicationcontroller "cache" deleted')],
    # 4
    "kubectl taint nodes node01 check=mycheck:NoSchedule": [prints("node/node01 tainted")],
    "kubectl describe node node01": [shows_text(lambda out: re.search(r"Taints:\s+check=mycheck:NoSchedule", out)
                                                is not None)],
    "kubectl apply -f examples/04-taints/pod-toleration-noschedule.yaml": [prints("pod/tolerates-noschedule created")],
    "kubectl apply -f examples/04-taints/pod-toleration-key-exists.yaml": [prints("pod/tolerates-check created")],
    "kubectl get pods -o wide": [
        shows(lambda rows: on(rows, "tolerates-noschedule") is not None and on(rows, "tolerates-check") is not None),
        shows(lambda rows: [r["NAME"][:len("node-agent-")] for r in rows if r["NODE"] == "node02"]  # 7: drained
              == ["node-agent-"] and len(running(rows, "web-")) == 4),
    ],
    "kubectl taint nodes node01 check=mycheck:NoSchedule-": [prints("node/node01 untainted")],
    "kubectl taint nodes node03 node-role.kubernetes.io/master=:PreferNoSchedule": [prints("node/node03 tainted")],
    "kubectl apply -f examples/04-taints/pod-toleration-prefernoschedule.yaml":
        [prints("pod/tolerates-master created")],
    "kubectl get pod tolerates-master -o wide": [shows(lambda rows: on(rows, "tolerates-master") in NODES)],
    "kubectl apply -f examples/04-taints/pod-tolerate-everything.yaml": [prints("pod/tolerates-everything created")],
    "kubectl apply -f examples/04-taints/pod-toleration-noexecute.yaml": [prints("pod/tolerates-noexecute created")],
    "kubectl get pods -o wide --field-selector spec.nodeName=node01": [
        shows(lambda rows: on(rows, "tolerates-everything") == on(rows, "tolerates-noexecute") == "node01"),
        shows(lambda rows: {"pinned", "selected"}.isdisjoint(r["NAME"] for r in rows)
              and not [r for r in rows if r["NAME"].startswith("web-")]
              and on(rows, "tolerates-everything") == "node01"),
        shows(lambda rows: [r["NAME"] for r in rows] == ["tolerates-everything"], timeout=120),
    ],
    "kubectl taint nodes node01 check=mycheck:NoExecute": [prints("node/node01 tainted")],
    "kubectl taint nodes node01 check=mycheck:NoExecute-": [prints("node/node01 untainted")],
    "kubectl taint nodes node03 node-role.kubernetes.io/master=:PreferNoSchedule-": [prints("node/node03 untainted")],
    # 5
    "kubectl apply -f examples/05-phases/pod-succeeded.yaml": [prints("pod/job-done created")],
    "kubectl apply -f examples/05-phases/pod-failed.yaml": [prints("pod/job-failed created")],
    "kubectl apply -f examples/05-phases/pod-unschedulable.yaml": [prints("pod/too-big created")],
    "kubectl get pods job-done job-failed too-big": [shows(lambda rows: [r["STATUS"] for r in rows]
                                                           == ["Completed", "Error", "Pending"])],
    "kubectl get pod job-done -o jsonpath='{.status.phase}'": [shows_text(lambda out: out == "Succeeded")],
    "kubectl get pod job-failed -o jsonpath='{.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}'":
        [shows_text(lambda out: out == "Failed 3")],
    "kubectl describe pod too-big": [shows_text(lambda out: "FailedScheduling" in out and "Insufficient cpu" in out)],
    "kubectl apply -f examples/05-phases/job-count.yaml": [prints("job.batch/count created")],
    "kubectl wait --for=condition=complete job/count --timeout=90s": [prints("job.batch/count condition met")],
    "kubectl get job count": [shows(lambda rows: [rows[0]["STATUS"], rows[0]["COMPLETIONS"]] == ["Complete", "4/4"])],
    "kubectl get pods -l job-name=count": [shows(lambda rows: [r["STATUS"] for r in rows] == ["Completed"] * 4)],
    "kubectl logs job/count": [prints("one piece of work done")],
    "kubectl describe job count": [prints("4 Succeeded / 0 Failed", "SuccessfulCreate", "Completed")],
    "kubectl delete job count": [both(prints('job.batch "count" deleted'), job_pods_deleted)],
    "kubectl apply -f examples/05-phases/pod-unreachable-10s.yaml": [prints("pod/short-fuse created")],
    "kubelab explain pod too-big": [prints("Unschedulable", "3 Insufficient cpu", "Nearest node: node0", "lacks")],
    "kubectl get pod short-fuse -o wide": [shows(lambda rows: on(rows, "short-fuse") == "node03")],
    "kill -STOP $(pgrep -f -- '--node-name node03')": [prints()],
    "kubectl describe node node03": [shows_text(lambda out: "node.kubernetes.io/unreachable:NoExecute" in out)],
    "kubectl get pods -o wide --field-selector spec.nodeName=node03": [shows(  # deleted; no kubelet to confirm
        lambda rows: {r["NAME"]: r["STATUS"] for r in rows}.get("short-fuse") == "Terminating", timeout=120)],
    "kill -CONT $(pgrep -f -- '--node-name node03')": [prints()],
    # 6
    "kubectl describe pod $POD": [shows_text(lambda out: "Events:" in out and "Started" in out)],
    "kubectl logs $POD": [prints("web is up")],
    "kubectl logs job-failed": [prints("cannot open /data/input.csv")],
    "kubectl exec -it $POD -- sh": [prints("hello from the pod")],
    "kubectl debug -it $POD --image=busybox -- sh": [prints("hello from the debugger")],
    "kubectl top nodes": [shows(lambda rows: sorted(r["NAME"] for r in rows) == ["node01", "node02", "node03"]
                                and all(r["CPU(cores)"][0].isdigit() for r in rows))],
    "kubectl top pods --containers": [shows(lambda rows: any(r["POD"].startswith("web-") and r["MEMORY(bytes)"]
                                                             .endswith("Mi") for r in rows))],
    # the test's KUBECONFIG is the one `kubelab up` writes: HTTPS (the page's reader, without one, sees localhost:8080)
    "kubectl cluster-info": [prints("Kubernetes control plane is running at https://127.0.0.1:")],
    "ls .kubelab/logs/": [prints("apiserver.log", "controller-manager.log", "scheduler.log", "kubelet-node01.log")],
    "tail -n 20 .kubelab/logs/kubelet-node01.log": [shows_text(lambda out: bool(out.strip()))],
    # 7
    "kubectl apply -f examples/07-maintenance/pod-unmanaged.yaml": [prints("pod/scratch created")],
    "kubectl cordon node02": [both(prints("node/node02 cordoned"), remember("web-on-node02", lambda shell, result: len(
        [r for r in table(shell.run("kubectl get pods -l app=web -o wide").stdout) if r["NODE"] == "node02"])))],
    "kubectl scale rc web --replicas=4": [prints("replicationcontroller/web scaled")],
    "kubectl apply -f examples/07-maintenance/daemonset-node-agent.yaml": [prints("daemonset.apps/node-agent created")],
    "kubectl rollout status ds/node-agent": [prints('daemon set "node-agent" successfully rolled out')],
    "kubectl get ds node-agent": [shows(lambda rows: [(r["DESIRED"], r["READY"], r["AVAILABLE"]) for r in rows]
                                        == [("3", "3", "3")])],
    "kubectl get pods -l app=node-agent -o wide": [shows(lambda rows: sorted(r["NODE"] for r in running(rows))
                                                         == list(NODES))],
    "kubectl apply -f examples/07-maintenance/pdb-web.yaml": [prints("poddisruptionbudget.policy/web created")],
    "kubectl get pdb web": [shows(lambda rows: [(r["MIN AVAILABLE"], r["MAX UNAVAILABLE"], r["ALLOWED DISRUPTIONS"])
                                                for r in rows] == [("3", "N/A", "1")])],
    "kubectl drain node02 --ignore-daemonsets": [fails_with(
        "cannot delete Pods with local storage (use --delete-emptydir-data to override)", "default/scratch")],
    "kubectl drain node02 --delete-emptydir-data --force": [fails_with(
        "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/node-agent-")],
    "kubectl drain node02 --ignore-daemonsets --delete-emptydir-data --force": [both(
        prints("node/node02 drained"), warns("ignoring DaemonSet-managed Pods: default/node-agent-"))],
    "kubectl uncordon node02": [prints("node/node02 uncordoned")],
    # 8
    "kubectl apply -f examples/kopf-operator/manifests/crd.yaml": [
        prints("customresourcedefinition.apiextensions.k8s.io/greetings.example.kubelab.io created")],
    "kubectl wait --for=condition=Established crd/greetings.example.kubelab.io": [prints("condition met")],
    "kubectl apply -f examples/kopf-operator/greeting.yaml": [
        prints("greeting.example.kubelab.io/hello created")],
    "kubectl get greetings": [
        shows(lambda rows: [(r["NAME"], r["MESSAGE"], r["CONFIGMAP"]) for r in rows]
              == [("hello", "hello, world", "")]),
        shows(lambda rows: [(r["NAME"], r["CONFIGMAP"]) for r in rows] == [("hello", "hello-greeting")]),
    ],
    "kubectl explain greeting.spec": [prints("FIELD: spec <Object>", "What the Greeting asks for.",
                                             "message\t<string> -required-")],
    "kopf run --standalone --namespace default examples/kopf-operator/operator.py": [operator_handled],
    "kubectl get configmap hello-greeting -o jsonpath='{.data.message}'": [shows_text(
        lambda out: out == "hello, world")],
    "kubectl delete greeting hello": [prints('greeting.example.kubelab.io "hello" deleted')],
    "kubectl get configmaps": [both(shows(lambda rows: "hello-greeting" not in [r["NAME"] for r in rows]),
                                    stop_operator)],
    # clean up
    "kubectl delete rc web": [prints('replicationcontroller "web" deleted')],
    "kubectl delete pdb web": [prints('poddisruptionbudget.policy "web" deleted')],
    "kubectl delete ds node-agent": [prints('daemonset.apps "node-agent" deleted')],
    "kubectl delete pods --all": [prints()],
    "kubectl label nodes node01 node02 node03 feng- rank-": [prints("node/node01 unlabeled")],
    "kubectl delete crd greetings.example.kubelab.io": [
        prints('customresourcedefinition.apiextensions.k8s.io "greetings.example.kubelab.io" deleted')],
}


def test_every_walkthrough_command_has_a_check() -> None:
    everywhere: set[str] = set()
    for lang in DOCS:
        commands = [c for lines in doc_sections(lang).values() for c in lines]
        counts = {c: commands.count(c) for c in commands}
        everywhere |= set(counts)
        missing = {c: n for c, n in counts.items() if len(CHECKS.get(c, [])) != n}
        assert not missing, f"{DOCS[lang]} commands whose checks do not match their occurrences: {missing}"
        assert list(doc_sections(lang)) == SECTIONS[lang]
    assert set(CHECKS) <= everywhere, f"checks for commands no page has: {set(CHECKS) - everywhere}"


def page_lines(lang: str) -> list[str]:
    return [c for lines in doc_sections(lang).values() for c in lines]


def zh_as_en(line: str) -> str:
    """The Chinese page's one command of its own (its diagram, with Chinese labels) as the English page has it."""
    return line.replace(" --svg flow-zh.svg --lang zh", " --svg flow.svg")


def test_both_pages_run_the_same_commands_but_the_diagram() -> None:
    """The Chinese page follows the English one command for command (one table of checks, keyed by command line
    and occurrence, serves both)."""
    assert [zh_as_en(c) for c in page_lines("zh")] == page_lines("en")


# ---- the walkthrough ---------------------------------------------------------------------------------------


def section_id(lang: str, section: str) -> str:
    """A readable test ID: ``en-0``, ``en-Clean up``; the Chinese page's numerals as digits (``zh-2``: 二、),
    its 清理 ``zh-Clean up``."""
    numerals = "一二三四五六七八九十"
    name = str(numerals.index(section) + 1) if section in numerals else {"清理": "Clean up"}.get(section, section)
    return f"{lang}-{name}"


RUNS = [pytest.param(lang, section, id=section_id(lang, section)) for lang in DOCS for section in SECTIONS[lang]]


@pytest.fixture(scope="module")
def shell(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    """The user's shell for one page (``request.param``: en or zh): a work directory with ``examples/`` and
    ``.venv``, kubectl on PATH (kubelab once the page activates ``.venv``) and ``KUBECONFIG`` at the cluster the
    page's ``kubelab up`` starts; ``kubelab down`` (and any watch or operator a failed section left running
    stopped) once the page's sections have run, before the other page's cluster starts."""
    if not os.path.exists(KUBECTL):
        pytest.skip(f"kubectl not found at {KUBECTL}")
    lang: str = request.param
    work = tmp_path_factory.mktemp(f"walkthrough-{lang}")
    (work / "examples").symlink_to(ROOT / "examples")
    (work / ".venv").symlink_to(Path(sys.prefix))  # the virtualenv `make setup` made, running this test
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(KUBECTL)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(work),  # .venv/bin once the page activates it
           "KUBECONFIG": str(work / ".kubelab" / "kubeconfig"), "LANG": "C.UTF-8"}
    if "KUBELAB_ETCD" in os.environ:
        env["KUBELAB_ETCD"] = os.environ["KUBELAB_ETCD"]
    (work / "probe").mkdir()
    sh = Shell(work, env, lang, choose(RUNTIME[lang], "auto", work / "probe"))
    try:
        yield sh
    finally:
        for left in ("watch", "operator"):
            if isinstance(running_left := sh.notes.pop(left, None), Watch):
                running_left.stop()
        sh.run(f"{sys.executable} -m kubelab down", timeout=120)  # also when the page never activated .venv


def run_line(shell: Shell, line: str) -> None:
    seen: dict[str, int] = shell.notes.setdefault("seen", {})  # type: ignore[assignment]
    index = seen.get(line, 0)
    seen[line] = index + 1
    result = SPECIAL[line](shell, line) if line in SPECIAL else shell.run(line)
    CHECKS[line][index](shell, line, result)


@pytest.mark.parametrize(("shell", "section"), RUNS, indirect=["shell"], scope="module")
def test_walkthrough(shell: Shell, section: str) -> None:
    """One section of a page, its commands in order, on the cluster the page's first section started."""
    for line in doc_sections(shell.lang)[section]:
        run_line(shell, line)
