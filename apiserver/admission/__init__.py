"""Admission: the chain every create, update and delete goes through after decoding and before storage.

kube-apiserver runs its admission plugins in two phases, mutating first and validating after; kubelab's chain does
the same with the dynamic plugins kube configures at run time:

    MutatingAdmissionWebhook → (defaults, validation again) → ValidatingAdmissionPolicy → ValidatingAdmissionWebhook

* ``attributes``: what a plugin sees of a request (``admission.Attributes``);
* ``chain``: the plugins in order, bound to one request; the stores call it (``registry.store.Admission``);
* ``webhook/``: the webhook configurations, matching, the HTTPS calls and the AdmissionReview exchange;
* ``policy/``: ValidatingAdmissionPolicy and its bindings, with CEL (``apiserver.cel``).

Built-in admission (namespace lifecycle, the pod rules) stays where it was, in the registry's strategies.
"""

from __future__ import annotations

from .attributes import Attributes
from .chain import AdmissionChain, RequestAdmission

__all__ = ["AdmissionChain", "Attributes", "RequestAdmission"]
