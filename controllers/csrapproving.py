"""The CSR approving controller (``pkg/controller/certificates/approver``): approve kubelets' client certificates.

kube-controller-manager's ``csrapproving`` approves only ``kubernetes.io/kube-apiserver-client-kubelet`` requests
for a kubelet's own client certificate, and only when the requester may, as a SubjectAccessReview tells:

* a node renewing its own certificate (the request's CN is the requester's user name): ``create`` on
  ``certificatesigningrequests/selfnodeclient`` (group ``certificates.k8s.io``);
* any node client certificate (a bootstrapping kubelet): ``create`` on ``certificatesigningrequests/nodeclient``.

An allowed request gets ``Approved`` (reason ``AutoApproved``) through ``/approval``; the signing controller issues
it. Anything else (user certificates from ``kubelab user add``, ``kubectl certificate approve``) is left for a
person to approve or deny.
"""

from __future__ import annotations

import logging

from cryptography.x509.oid import NameOID

from apimachinery.meta import Object
from controllers.support.base import Controller
from controllers.support.csrutil import (
    KUBE_APISERVER_CLIENT_KUBELET,
    approval,
    condition,
    kubelet_client_problem,
    parse_request,
    subject,
)
from kubeclient import CERTIFICATE_SIGNING_REQUESTS, SUBJECT_ACCESS_REVIEWS, Clientset, InformerFactory

log = logging.getLogger(__name__)

# (subresource to check, whether the request's CN must be the requester, the approval's message), in kube's order
RECOGNIZERS = (
    ("selfnodeclient", True, "Auto approving self kubelet client certificate after SubjectAccessReview."),
    ("nodeclient", False, "Auto approving kubelet client certificate after SubjectAccessReview."),
)


def subject_access_review(csr: Object, subresource: str) -> Object:
    """May the CSR's requester ``create certificatesigningrequests/<subresource>``?"""
    spec = csr.get("spec") or {}
    review_spec = {"user": spec.get("username", ""), "groups": list(spec.get("groups") or []),
                   "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                          "verb": "create", "subresource": subresource, "version": "*"}}
    if spec.get("uid"):
        review_spec["uid"] = spec["uid"]
    if spec.get("extra"):
        review_spec["extra"] = spec["extra"]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": review_spec}


class CSRApprovingController(Controller):
    name = "certificatesigningrequest-approving-controller"
    queue_name = "certificate"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.client = clientset.resource(CERTIFICATE_SIGNING_REQUESTS)
        self.reviews = clientset.resource(SUBJECT_ACCESS_REVIEWS)
        self.informer = factory.informer(CERTIFICATE_SIGNING_REQUESTS)
        self.informers = [self.informer]
        self.informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        csr = self.informer.indexer.get_by_key(key)
        if csr is None or (csr.get("status") or {}).get("certificate") or any(approval(csr)):
            return
        spec = csr.get("spec") or {}
        if spec.get("signerName") != KUBE_APISERVER_CLIENT_KUBELET:
            return
        try:
            request = parse_request(csr)
        except ValueError as err:
            raise ValueError(f"unable to parse csr {key!r}: {err}") from None
        if kubelet_client_problem(request, list(spec.get("usages") or [])) is not None:
            return
        tried = []
        for subresource, own, message in RECOGNIZERS:
            if own and subject(request, NameOID.COMMON_NAME) != [spec.get("username")]:
                continue
            tried.append(subresource)
            review = await self.reviews.create(subject_access_review(csr, subresource))
            if (review.get("status") or {}).get("allowed"):
                status = dict(csr.get("status") or {})
                status["conditions"] = [*status.get("conditions", []), condition("Approved", "AutoApproved", message)]
                await self.client.update({**csr, "status": status}, subresource="approval")
                log.info("approved certificate signing request %s (%s)", key, subresource)
                return
        log.info("recognized csr %r as %s but subject access review was not approved", key, tried)
