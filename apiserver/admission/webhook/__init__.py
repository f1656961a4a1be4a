"""Admission webhooks: MutatingAdmissionWebhook and ValidatingAdmissionWebhook.

* ``configurations``: the webhooks of the stored configurations, in kube's order, with their matching;
* ``client``: the HTTPS call, to ``clientConfig.url`` or to a Service resolved through its Endpoints;
* ``review``: the ``admission.k8s.io/v1`` AdmissionReview sent and the response's checks;
* ``dispatch``: the two plugins (mutating in order with reinvocation, validating in parallel) and kube's error
  texts.
"""

from __future__ import annotations

from .dispatch import MutatingWebhooks, ValidatingWebhooks

__all__ = ["MutatingWebhooks", "ValidatingWebhooks"]
