"""The audit policy `kubelab up` hands the apiserver: the creation flow's writes, and little else.

Written once per data dir as ``audit-policy.yaml`` (then kept, so a user may edit it; delete it to get this one
back). Level Metadata for every write — who, what, when to the µs, the revision stored — which is what
``kubelab trace`` reads; None for the noise that would drown it: reads and watches (kubectl, informers' relists),
Leases (leader election and node heartbeats every few seconds), Events (the flow's events carry their own
eventTime) and nodes' status. Rotated at ``MAX_SIZE_MB``, ``MAX_BACKUPS`` kept, none older than ``MAX_AGE_DAYS``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FILE_NAME", "LOG_NAME", "apiserver_flags", "ensure_audit_policy"]

FILE_NAME = "audit-policy.yaml"
LOG_NAME = "audit.log"  # in <data-dir>/logs, beside the components' logs
MAX_SIZE_MB, MAX_BACKUPS, MAX_AGE_DAYS = 20, 5, 7

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
# Written by `kubelab up` (kubelab/auditpolicy.py); edit freely, delete to get the default back.
omitManagedFields: true
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: ""
    resources: ["events", "nodes/status"]
  - group: events.k8s.io
    resources: ["events"]
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
"""


def ensure_audit_policy(data_dir: Path) -> Path:
    """The data dir's audit policy, created when missing."""
    path = data_dir / FILE_NAME
    if not path.exists():
        path.write_text(POLICY, encoding="utf-8")
    return path


def apiserver_flags(data_dir: Path, log_dir: Path) -> list[str]:
    """kube-apiserver's ``--audit-*`` flags for a cluster in ``data_dir`` with its logs in ``log_dir``."""
    return ["--audit-policy-file", str(ensure_audit_policy(data_dir)), "--audit-log-path", str(log_dir / LOG_NAME),
            "--audit-log-maxsize", str(MAX_SIZE_MB), "--audit-log-maxbackup", str(MAX_BACKUPS),
            "--audit-log-maxage", str(MAX_AGE_DAYS), "--audit-log-format", "json"]
