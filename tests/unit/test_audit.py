"""apiserver.audit: the policy's rule matching, lumberjack rotation, and a backend that never blocks or raises."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path

import pytest
import yaml

from apiserver.audit import LogBackend, PolicyError
from apiserver.audit.middleware import new_audit_id
from apiserver.audit.policy import Level, parse_policy
from apiserver.audit.rotate import MEGABYTE, RotatingFile

POLICY = yaml.safe_load("""
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get"]
- level: RequestResponse
  resources: [{group: "", resources: ["pods/status", "*/scale"]}]
  omitStages: ["ResponseStarted"]
- level: Request
  resources: [{group: apps, resources: ["deployments/*"]}, {group: "", resources: ["configmaps"],
              resourceNames: ["cfg"]}]
  namespaces: ["prod"]
- level: Metadata
  nonResourceURLs: ["/healthz*"]
- level: Metadata
  resources: [{group: ""}]
  omitManagedFields: false
""")


def attrs(verb: str = "create", resource: str = "pods", subresource: str = "", group: str = "",
          namespace: str = "default", name: str = "") -> dict[str, str]:
    return {"verb": verb, "group": group, "version": "v1", "resource": resource, "subresource": subresource,
            "namespace": namespace, "name": name}


@pytest.mark.parametrize(("user", "groups", "request_attrs", "level"), [
    ("system:kube-proxy", (), attrs(), Level.NONE),
    ("system:node:n1", ("system:nodes",), attrs("get"), Level.NONE),
    ("system:node:n1", ("system:nodes",), attrs("patch", subresource="status"), Level.REQUEST_RESPONSE),
    ("alice", (), attrs("update", "replicationcontrollers", "scale"), Level.REQUEST_RESPONSE),
    ("alice", (), attrs("update", "deployments", "scale", "apps", "prod"), Level.REQUEST),
    ("alice", (), attrs("update", "deployments", "scale", "apps", "dev"), Level.NONE),  # namespace not listed
    ("alice", (), attrs("update", "deployments", "", "apps", "prod"), Level.REQUEST),  # as kube: pods/* has pods
    ("alice", (), attrs("update", "configmaps", namespace="prod", name="cfg"), Level.REQUEST),
    ("alice", (), attrs("update", "configmaps", namespace="prod", name="other"), Level.METADATA),
    ("alice", (), {"verb": "get", "path": "/healthz/etcd"}, Level.METADATA),
    ("alice", (), {"verb": "get", "path": "/version"}, Level.NONE),  # no rule: None
    ("alice", (), attrs(group="batch", resource="jobs"), Level.NONE),
])
def test_the_first_matching_rule_decides(user: str, groups: tuple[str, ...], request_attrs: dict[str, str],
                                         level: Level) -> None:
    assert parse_policy(POLICY).evaluate(user, groups, request_attrs).level == level


def test_omit_stages_add_up_and_omit_managed_fields_is_overridden_per_rule() -> None:
    policy = parse_policy({**POLICY, "omitManagedFields": True})
    status = policy.evaluate("alice", (), attrs("patch", subresource="status"))
    assert status.omit_stages == {"RequestReceived", "ResponseStarted"} and status.omit_managed_fields
    assert not policy.evaluate("alice", (), attrs("update", "secrets")).omit_managed_fields


@pytest.mark.parametrize(("doc", "message"), [
    ({"apiVersion": "v1", "kind": "Policy"}, "not an audit.k8s.io/v1 Policy"),
    ({**POLICY, "rules": [{"level": "Everything"}]}, 'level: Unsupported value: "Everything"'),
    ({**POLICY, "rules": [{"level": "None", "omitStages": ["Later"]}]},
     'rules[0].omitStages: Unsupported value: "Later"'),
    ({**POLICY, "rules": [{"level": "None", "nonResourceURLs": ["/x"], "namespaces": ["a"]}]},
     "rules cannot apply to both regular resources and non-resource URLs"),
])
def test_an_invalid_policy_is_refused(doc: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_policy(doc)


def test_rotation_renames_the_full_file_and_keeps_max_backups(tmp_path: Path) -> None:
    log = RotatingFile(tmp_path / "logs" / "audit.log", max_size_mb=1, max_backups=2)
    line = b"x" * (MEGABYTE // 4 - 1) + b"\n"
    for _ in range(4 * 5):  # five files' worth
        log.write(line)
    log.close()
    backups = log.backups()
    assert len(backups) == 2 and all(p.name.startswith("audit-") and p.suffix == ".log" for _, p in backups)
    assert all(p.stat().st_size == 4 * len(line) for _, p in backups)
    assert (tmp_path / "logs" / "audit.log").stat().st_size == 4 * len(line)


def test_rotation_removes_backups_older_than_max_age(tmp_path: Path) -> None:
    old = tmp_path / "audit-2020-01-01T00-00-00.000.log"
    old.write_text("{}\n")
    log = RotatingFile(tmp_path / "audit.log", max_size_mb=1, max_age_days=7)
    log.write(b"{}\n")
    log.rotate()
    log.close()
    assert not old.exists() and len(log.backups()) == 1


def test_the_backend_writes_json_lines_after_the_callers_in_one_write(tmp_path: Path) -> None:
    backend = LogBackend(str(tmp_path / "audit.log"))
    writes: list[bytes] = []
    original = backend._out.write

    def recording(data: bytes) -> None:
        writes.append(data)
        original(data)

    backend._out.write = recording  # type: ignore[method-assign]

    async def requests() -> None:
        for i in range(3):
            backend.process({"auditID": str(i), "stage": "ResponseComplete"})
        assert writes == []  # nothing written on the request path
        await asyncio.sleep(0)

    asyncio.run(requests())
    assert len(writes) == 1  # the three events in one write
    backend.shutdown()
    lines = (tmp_path / "audit.log").read_text().splitlines()
    assert [json.loads(line)["auditID"] for line in lines] == ["0", "1", "2"]


def test_a_full_queue_drops_and_a_failed_write_is_counted_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    backend = LogBackend("/dev/full", buffer_size=2)

    async def requests() -> None:
        for i in range(10):  # the deque holds two until the loop drains it: the rest are dropped, not waited for
            backend.process({"auditID": str(i)})
        assert backend.dropped == 8
        await asyncio.sleep(0)

    asyncio.run(requests())
    assert backend.failed == 2 and backend.written == 0  # /dev/full: ENOSPC on every write
    backend.process({"auditID": "outside a loop"})  # written at once
    assert backend.failed == 3
    backend.shutdown()
    assert "dropped" in caplog.text


def test_audit_ids() -> None:
    ids = [new_audit_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    for audit_id in ids[:3]:
        assert str(uuid.UUID(audit_id)) == audit_id and uuid.UUID(audit_id).version == 4
