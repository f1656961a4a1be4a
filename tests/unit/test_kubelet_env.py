"""kubelet.env: $(VAR) expansion as Kubernetes' forked expansion package does it, and the downward API."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet.env import EnvError, expand, expand_command, field_value, mapping_for, pod_env, resource_value, runtime_env
from kubelet.sources import CONFIG_MAP, SECRET, SourceKind, env_references

POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1", "labels": {"app": "web", "tier": "front"},
                 "annotations": {"note": 'say "hi"'}},
    "spec": {"nodeName": "node01", "serviceAccountName": "default",
             "containers": [{"name": "main", "image": "busybox",
                             "resources": {"limits": {"cpu": "500m", "memory": "64Mi"},
                                           "requests": {"cpu": "250m"}}},
                            {"name": "side", "image": "busybox"}]},
}
ALLOCATABLE = {"cpu": "4", "memory": "8Gi"}


@pytest.mark.parametrize("text,expected", [
    ("$(A)", "alpha"),
    ("x$(A)y$(B)z", "xalphaybetaz"),
    ("$$(A)", "$(A)"),
    ("$$$(A)", "$alpha"),
    ("$(UNDEFINED)", "$(UNDEFINED)"),
    ("$(A", "$(A"),
    ("$A", "$A"),
    ("cost: 5$", "cost: 5$"),
    ("$()", ""),
    ("", ""),
])
def test_expand(text: str, expected: str) -> None:
    assert expand(text, mapping_for({"A": "alpha", "B": "beta", "": ""})) == expected


def test_expand_command_uses_only_given_env() -> None:
    container = {"name": "c", "command": ["sh", "-c", "echo $(GREETING) $(PATH) $$HOME"], "args": ["$(GREETING)"]}
    expanded = expand_command(container, {"GREETING": "hi"})
    assert expanded["command"] == ["sh", "-c", "echo hi $(PATH) $HOME"]
    assert expanded["args"] == ["hi"]
    assert container["args"] == ["$(GREETING)"]  # the spec itself is untouched


@pytest.mark.parametrize("path,expected", [
    ("metadata.name", "web-1"),
    ("metadata.namespace", "prod"),
    ("metadata.uid", "u-1"),
    ("metadata.labels['app']", "web"),
    ("metadata.labels['missing']", ""),
    ("metadata.annotations['note']", 'say "hi"'),
    ("metadata.labels", 'app="web"\ntier="front"'),
    ("metadata.annotations", 'note="say \\"hi\\""'),
    ("spec.nodeName", "node01"),
    ("spec.serviceAccountName", "default"),
    ("status.podIP", "10.0.0.5"),
    ("status.hostIP", "192.168.1.2"),
])
def test_field_value(path: str, expected: str) -> None:
    assert field_value(POD, path, "10.0.0.5", "192.168.1.2") == expected


def test_field_value_unknown_path() -> None:
    with pytest.raises(EnvError):
        field_value(POD, "spec.schedulerName", "", "")


@pytest.mark.parametrize("ref,container,expected", [
    ({"resource": "limits.cpu"}, 0, "1"),                       # 500m rounds up to 1 core
    ({"resource": "limits.cpu", "divisor": "1m"}, 0, "500"),
    ({"resource": "requests.cpu", "divisor": "1m"}, 0, "250"),
    ({"resource": "limits.memory"}, 0, str(64 * 2**20)),
    ({"resource": "limits.memory", "divisor": "1Mi"}, 0, "64"),
    ({"resource": "limits.cpu"}, 1, "4"),                       # no limit: node allocatable
    ({"resource": "limits.memory", "divisor": "1Gi"}, 1, "8"),
    ({"resource": "requests.memory"}, 1, "0"),
    ({"resource": "limits.cpu", "containerName": "main", "divisor": "1m"}, 1, "500"),
])
def test_resource_value(ref: dict[str, str], container: int, expected: str) -> None:
    assert resource_value(POD, POD["spec"]["containers"][container], ref, ALLOCATABLE) == expected


def _env(container: dict[str, Any], config_maps: dict[str, Any] | None = None,
         secrets: dict[str, Any] | None = None) -> dict[str, str]:
    sources: dict[tuple[SourceKind, str], Any] = {(CONFIG_MAP, name): obj for name, obj in (config_maps or {}).items()}
    sources.update(((SECRET, name), obj) for name, obj in (secrets or {}).items())
    return pod_env(POD, container, pod_ip="10.0.0.5", host_ip="192.168.1.2", sources=sources,
                   allocatable=ALLOCATABLE)


def test_pod_env_order_and_expansion() -> None:
    container = {"name": "main", "env": [
        {"name": "A", "value": "one"},
        {"name": "B", "value": "$(A)-two-$(C)"},          # C is defined later: stays as written
        {"name": "C", "value": "three"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "D", "value": "$(POD) on $$(POD)"},
        {"name": "A", "value": "override"},
        {"name": "EMPTY"},
    ]}
    env = _env(container)
    assert env == {"A": "override", "B": "one-two-$(C)", "C": "three", "POD": "web-1", "D": "web-1 on $(POD)",
                   "EMPTY": ""}


def test_pod_env_config_maps() -> None:
    cm = {"data": {"level": "debug", "mode": "fast"}}
    container = {"name": "main",
                 "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
                 "env": [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
                         {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "x",
                                                                           "optional": True}}},
                         {"name": "OPT2", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nokey",
                                                                            "optional": True}}}]}
    assert env_references(container) == {(CONFIG_MAP, "settings"), (CONFIG_MAP, "gone")}
    env = _env(container, {"settings": cm, "gone": None})
    assert env == {"CFG_level": "debug", "CFG_mode": "fast", "LEVEL": "debug"}


def test_pod_env_missing_config_map_is_an_error() -> None:
    container = {"name": "main", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}]}
    with pytest.raises(EnvError, match='configmap "gone" not found'):
        _env(container, {"gone": None})
    container["env"][0]["valueFrom"]["configMapKeyRef"]["name"] = "cm"
    with pytest.raises(EnvError, match="couldn't find key k in ConfigMap prod/cm"):
        _env(container, {"cm": {"data": {}}})


def test_runtime_env_pod_variables_win() -> None:
    env = runtime_env(POD, {"HOME": "/data", "X": "1"})
    assert env["HOSTNAME"] == "web-1" and env["HOME"] == "/data" and env["X"] == "1" and env["PATH"]
    assert runtime_env({**POD, "spec": {"hostname": "db-0"}}, {})["HOSTNAME"] == "db-0"  # spec.hostname first


def test_secret_references_are_unmet_unless_optional() -> None:
    optional = {"name": "S", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k", "optional": True}}}
    assert _env({"name": "main", "env": [optional], "envFrom": [{"secretRef": {"name": "x", "optional": True}}]}) == {}
    with pytest.raises(EnvError, match='secret "creds" not found'):
        _env({"name": "main", "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]})
    with pytest.raises(EnvError, match='secret "x" not found'):
        _env({"name": "main", "envFrom": [{"secretRef": {"name": "x"}}]})


def test_pod_env_secrets_are_decoded() -> None:
    secret = {"data": {"user": "YWRtaW4=", "pass": "czNjcjN0"}}  # admin, s3cr3t
    container = {"name": "main",
                 "envFrom": [{"secretRef": {"name": "creds"}, "prefix": "DB_"}],
                 "env": [{"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "pass"}}},
                         {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nokey",
                                                                        "optional": True}}},
                         {"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "creds", "key": "user"}}}]}
    assert env_references(container) == {(SECRET, "creds"), (CONFIG_MAP, "creds")}
    env = _env(container, {"creds": {"data": {"user": "from-configmap"}}}, {"creds": secret})
    assert env == {"DB_user": "admin", "DB_pass": "s3cr3t", "PASS": "s3cr3t", "CFG": "from-configmap"}
    container = {"name": "main", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]}
    with pytest.raises(EnvError, match="couldn't find key k in Secret prod/creds"):
        _env(container, secrets={"creds": secret})
