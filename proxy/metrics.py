"""kube-proxy's metrics (``pkg/proxy/metrics``), kube 1.32's names and buckets, served on ``/metrics`` at the
``--metrics-port`` (kube-proxy's ``--metrics-bind-address``, 127.0.0.1:10249), with the client's ``rest_client_*``
and the process's ``process_*`` from the same registry.

One observation per sync, none per rule, so syncing does not notice them.
"""

from __future__ import annotations

from apimachinery.metrics import Counter, Gauge, Histogram, exponential_buckets

__all__ = ["LAST_QUEUED", "LAST_SYNC", "SYNC_DURATION", "SYNC_ERRORS", "SERVICE_PORTS"]

SYNC_DURATION = Histogram(
    "kubeproxy_sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15))
LAST_SYNC = Gauge(
    "kubeproxy_sync_proxy_rules_last_timestamp_seconds", "The last time proxy rules were successfully synced")
LAST_QUEUED = Gauge(
    "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
    "The last time a sync of proxy rules was queued")
SYNC_ERRORS = Counter(
    "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
    "Cumulative proxy rules restore failures (here: a failed nftables transaction or relay set-up)")
SERVICE_PORTS = Gauge(
    "kubeproxy_sync_proxy_rules_service_ports", "Service ports programmed by the last successful sync "
    "(this project's; kube counts rules per table instead)")
