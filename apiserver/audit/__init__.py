"""The apiserver's audit log, as kube-apiserver's (``k8s.io/apiserver/pkg/audit``): who did what, when, to the µs.

Three small parts, each with one job:

* ``policy``: an ``audit.k8s.io/v1`` Policy (``--audit-policy-file``) decides per request the level (None,
  Metadata, Request, RequestResponse) and the stages left out, first matching rule wins, no match is None;
* ``middleware``: the ASGI filter (after authentication, before authorization, as kube's ``WithAudit``) that builds
  the ``audit.k8s.io/v1`` Event of each request and hands its stages (RequestReceived, ResponseStarted for watches
  and other long-running requests, ResponseComplete, Panic) to the backend;
* ``backend``: the log backend (``--audit-log-path``, ``-`` is stdout): a bounded deque drained in batches on the
  event loop, after the requests it is busy with, that writes JSON lines and rotates the file as lumberjack does
  (``rotate``). Handing over never blocks and never fails a request: a full deque drops the event and a failed
  write (a full disk, an unwritable path) is counted; both are logged, at most every few seconds.
"""

from .backend import AuditBackend, LogBackend
from .middleware import AuditMiddleware
from .policy import Level, Policy, PolicyError, load_policy

__all__ = ["AuditBackend", "AuditMiddleware", "Level", "LogBackend", "Policy", "PolicyError", "load_policy"]
