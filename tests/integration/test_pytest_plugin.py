"""The pytest plugin as a user's suite meets it, each run a real ``pytest`` in a subprocess (bounded in time):
the example operator project's tests pass, a failure's report shows the events and the components' logs, and
pytest-xdist workers each get a cluster of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.kubectl
API_ONLY = "[pytest]\nkubelab_nodes = 0\nkubelab_components = apiserver\n"


@pytest.fixture(autouse=True)
def environment(kubectl_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's kubectl (skipped without one) for the runs' Cluster.kubectl; no fsync, as `make test` runs."""
    monkeypatch.setenv("KUBELAB_KUBECTL", kubectl_bin)
    monkeypatch.setenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")


def pytest_run(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=dict(os.environ))


def test_the_example_kopf_operator_passes_its_own_tests() -> None:
    pytest.importorskip("kopf")
    done = pytest_run(ROOT / "examples" / "kopf-operator", "-q")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout


def test_a_failure_report_shows_the_namespace_events_and_the_component_logs(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(API_ONLY)
    (tmp_path / "test_widget.py").write_text(
        "import httpx\n\n"
        "def test_widget(kubelab_cluster, kubelab_namespace):\n"
        "    httpx.post(f'{kubelab_cluster.api_url}/api/v1/namespaces/{kubelab_namespace}/events', json={\n"
        "        'apiVersion': 'v1', 'kind': 'Event', 'metadata': {'name': 'e1'}, 'reason': 'Exploded',\n"
        "        'message': 'the widget exploded', 'type': 'Warning',\n"
        "        'involvedObject': {'kind': 'Pod', 'name': 'w', 'namespace': kubelab_namespace}}).raise_for_status()\n"
        "    assert False, 'on purpose'\n\n"
        "def test_without_the_cluster():\n"
        "    assert False, 'plain'\n")
    done = pytest_run(tmp_path, "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    widget, plain = done.stdout.split("test_without_the_cluster ___")
    assert "kubelab: events and component logs" in widget
    assert "$ kubectl get events -n test-widget-" in widget
    assert "Exploded" in widget and "the widget exploded" in widget
    assert "--- apiserver: last 15 lines ---" in widget and "Uvicorn running on" in widget
    assert "kubelab: events" not in plain  # a test that did not use the cluster gets no section


def test_xdist_workers_each_get_their_own_cluster_and_keep_keeps_the_data(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "pytest.ini").write_text(API_ONLY)
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import os\n\n"
            f"def test_{name}(kubelab_cluster, kubelab_kubeconfig, kubelab_namespace):\n"
            f"    kubelab_cluster.kubectl('create', 'configmap', 'mine', '-n', kubelab_namespace)\n"
            f"    with open('seen-{name}', 'w') as out:\n"
            f"        out.write(f\"{{os.environ['PYTEST_XDIST_WORKER']}} {{kubelab_cluster.api_url}} "
            f"{{kubelab_cluster.data_dir}} {{kubelab_kubeconfig}}\")\n")
    done = pytest_run(tmp_path, "-q", "-n", "2", "--dist", "loadfile", "--kubelab-keep")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [(tmp_path / f"seen-{name}").read_text().split() for name in ("a", "b")]
    assert seen[0][0] != seen[1][0]  # two workers ...
    assert seen[0][1] != seen[1][1] and seen[0][2] != seen[1][2]  # ... two apiservers, two data dirs
    for _, _, data_dir, kubeconfig in seen:
        assert (Path(data_dir) / "logs" / "apiserver.log").is_file()  # kept
        assert kubeconfig == str(Path(data_dir) / "kubeconfig")


def test_kubelab_clusters_starts_each_shape_once_and_shares_it_across_modules(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(API_ONLY)
    other = '{"apiserver": ["--etcd-compaction-interval", "0"]}'
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "def test_shapes(kubelab_cluster, kubelab_clusters):\n"
            "    same = kubelab_clusters(nodes=0, components=['apiserver'])\n"
            f"    second = kubelab_clusters(nodes=0, components=['apiserver'], extra_args={other})\n"
            "    assert same is kubelab_cluster and second is not same\n"
            "    assert second is kubelab_clusters(0, ['apiserver'], extra_args=" + other + ")\n"
            "    second.kubectl('get', 'namespaces')\n"
            f"    with open('seen-{name}', 'w') as out:\n"
            "        out.write(f'{same.api_url} {same.data_dir} {second.api_url} {second.data_dir}')\n")
    done = pytest_run(tmp_path, "-q", "-p", "no:xdist")
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [(tmp_path / f"seen-{name}").read_text().split() for name in ("a", "b")]
    assert seen[0] == seen[1]  # the second module got the clusters the first one started
    assert seen[0][0] != seen[0][2]  # two shapes, two apiservers
    for data_dir in (seen[0][1], seen[0][3]):
        assert not Path(data_dir).exists()  # both stopped, their temporary data dirs gone, at the session's end
