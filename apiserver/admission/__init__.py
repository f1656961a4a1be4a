"""Admission: the chain every create, update and delete goes through after decoding and before storage.

kube-apiserver runs its admission plugins in two phases, mutating first and validating after; kubelab's chain does
the same, in kube's order, with the dynamic plugins and the built-in ones that need other objects:

    LimitRanger (defaults) → Priority → RuntimeClass → DefaultIngressClass → MutatingAdmissionWebhook
    → (defaults, validation again) → LimitRanger (min/max) → Priority (one globalDefault) → RuntimeClass
    → ValidatingAdmissionPolicy → ValidatingAdmissionWebhook → ResourceQuota (checks, then charges usage)

* ``attributes``: what a plugin sees of a request (``admission.Attributes``);
* ``chain``: the plugins in order, bound to one request; the stores call it (``registry.store.Admission``);
* ``webhook/``: the webhook configurations, matching, the HTTPS calls and the AdmissionReview exchange;
* ``policy/``: ValidatingAdmissionPolicy and its bindings, with CEL (``apiserver.cel``);
* ``limitranger``, ``resourcequota``: LimitRanges applied to pods; quotas checked and charged;
* ``priority``: pods' priority from their PriorityClass (always on, as in kube);
* ``runtimeclass``: a pod's RuntimeClass must exist; its overhead and scheduling are merged into the pod;
* ``defaultingressclass``: new Ingresses without a class get the default IngressClass.

The other built-in admission (namespace lifecycle, the pod rules) stays in the registry's strategies.
"""

from __future__ import annotations

from .attributes import Attributes
from .chain import AdmissionChain, RequestAdmission

__all__ = ["AdmissionChain", "Attributes", "RequestAdmission"]
