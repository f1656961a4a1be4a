"""What `kubelab up --runtime auto --pod-network auto` resolve to, with the host's answers faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from apimachinery import sysbin
from kubelab import cli, runtimechoice
from kubelab.runtimechoice import Choice, choose


def _host(monkeypatch: pytest.MonkeyPatch, linux: str | None, bridge: str | None = None) -> None:
    """``linux``/``bridge``: why the host cannot run Linux containers / build the bridge (None: it can)."""
    monkeypatch.setattr(runtimechoice, "unavailable", lambda scratch: linux)
    monkeypatch.setattr(runtimechoice, "usable", lambda: bridge)


def test_the_defaults_are_auto() -> None:
    args = cli.parse_args(["up"])[1]
    assert (args.runtime, args.pod_network) == ("auto", "auto")


def test_auto_is_linux_on_the_bridge_where_the_host_allows_it(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    _host(monkeypatch, None)
    assert choose("auto", "auto", tmp_path) == Choice(
        "linux", "bridge", "auto: root, namespaces, pivot_root and a static busybox; "
                           "bridge pod network: root, nft and network namespaces")


def test_auto_falls_back_to_process_on_the_host_network_and_says_why(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    _host(monkeypatch, "the kubelet does not run as root")
    assert choose("auto", "auto", tmp_path) == Choice("process", "host", "auto: the kubelet does not run as root")
    _host(monkeypatch, None, "nft is not installed")
    chosen = choose("auto", "auto", tmp_path)
    assert (chosen.runtime, chosen.pod_network) == ("linux", "host") and "nft is not installed" in chosen.why


def test_bridge_without_linux_containers_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _host(monkeypatch, "the kubelet does not run as root")
    with pytest.raises(ValueError, match="--pod-network bridge needs Linux containers, and the runtime is process"):
        choose("process", "bridge", tmp_path)
    with pytest.raises(ValueError, match="does not run as root"):
        choose("auto", "bridge", tmp_path)
    assert choose("docker", "auto", tmp_path) == Choice("docker", "host", "--runtime")


def test_system_binaries_are_found_in_sbin_whatever_path_says(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """A root process started with a plain user's PATH (no /usr/sbin) still finds nft: ``kubelab up`` chooses
    the bridge pod network by it, the kubelet and kube-proxy run it."""
    sbin = tmp_path / "sbin"
    sbin.mkdir()
    tool = sbin / "kubelab-test-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert sysbin.find("kubelab-test-tool") is None
    monkeypatch.setattr(sysbin, "SBIN", (str(sbin),))
    assert sysbin.find("kubelab-test-tool") == str(tool)
    assert sysbin.system_binary("kubelab-no-such-tool") == "kubelab-no-such-tool"
