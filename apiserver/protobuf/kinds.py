"""Which protobuf message a request body holds, from the ``runtime.Unknown`` envelope's apiVersion and kind.

One row per kind this apiserver accepts as a body: the served resources (create/update), the subresource bodies
(``Binding``, ``Eviction``, ``Scale``, ``TokenRequest``), the create-only reviews (``SelfSubjectAccessReview`` …) and
``DeleteOptions``. client-go registers ``DeleteOptions`` in every group
version, so it arrives as ``v1``, ``apps/v1``, ``policy/v1`` … and is accepted under any apiVersion.
"""

from __future__ import annotations

from google.protobuf.message import Message

from apimachinery import errors

from .gen.k8s_io.api.apps.v1 import generated_pb2 as appsv1
from .gen.k8s_io.api.authentication.v1 import generated_pb2 as authenticationv1
from .gen.k8s_io.api.authorization.v1 import generated_pb2 as authorizationv1
from .gen.k8s_io.api.autoscaling.v1 import generated_pb2 as autoscalingv1
from .gen.k8s_io.api.autoscaling.v2 import generated_pb2 as autoscalingv2
from .gen.k8s_io.api.batch.v1 import generated_pb2 as batchv1
from .gen.k8s_io.api.certificates.v1 import generated_pb2 as certificatesv1
from .gen.k8s_io.api.coordination.v1 import generated_pb2 as coordinationv1
from .gen.k8s_io.api.core.v1 import generated_pb2 as corev1
from .gen.k8s_io.api.discovery.v1 import generated_pb2 as discoveryv1
from .gen.k8s_io.api.networking.v1 import generated_pb2 as networkingv1
from .gen.k8s_io.api.policy.v1 import generated_pb2 as policyv1
from .gen.k8s_io.api.rbac.v1 import generated_pb2 as rbacv1
from .gen.k8s_io.api.scheduling.v1 import generated_pb2 as schedulingv1
from .gen.k8s_io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as metav1

KINDS: dict[tuple[str, str], type[Message]] = {
    ("v1", "Pod"): corev1.Pod,
    ("v1", "Node"): corev1.Node,
    ("v1", "Namespace"): corev1.Namespace,
    ("v1", "ReplicationController"): corev1.ReplicationController,
    ("v1", "Event"): corev1.Event,
    ("v1", "Service"): corev1.Service,
    ("v1", "ConfigMap"): corev1.ConfigMap,
    ("v1", "Secret"): corev1.Secret,
    ("v1", "ServiceAccount"): corev1.ServiceAccount,
    ("v1", "Endpoints"): corev1.Endpoints,
    ("v1", "Binding"): corev1.Binding,
    ("v1", "LimitRange"): corev1.LimitRange,
    ("v1", "ResourceQuota"): corev1.ResourceQuota,
    ("v1", "PersistentVolume"): corev1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): corev1.PersistentVolumeClaim,
    ("v1", "PodTemplate"): corev1.PodTemplate,
    ("apps/v1", "Deployment"): appsv1.Deployment,
    ("apps/v1", "DaemonSet"): appsv1.DaemonSet,
    ("apps/v1", "ControllerRevision"): appsv1.ControllerRevision,
    ("apps/v1", "ReplicaSet"): appsv1.ReplicaSet,
    ("apps/v1", "StatefulSet"): appsv1.StatefulSet,
    ("batch/v1", "Job"): batchv1.Job,
    ("batch/v1", "CronJob"): batchv1.CronJob,
    ("coordination.k8s.io/v1", "Lease"): coordinationv1.Lease,
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): certificatesv1.CertificateSigningRequest,
    ("discovery.k8s.io/v1", "EndpointSlice"): discoveryv1.EndpointSlice,
    ("networking.k8s.io/v1", "Ingress"): networkingv1.Ingress,
    ("networking.k8s.io/v1", "IngressClass"): networkingv1.IngressClass,
    ("networking.k8s.io/v1", "NetworkPolicy"): networkingv1.NetworkPolicy,
    ("policy/v1", "Eviction"): policyv1.Eviction,
    ("policy/v1", "PodDisruptionBudget"): policyv1.PodDisruptionBudget,
    ("scheduling.k8s.io/v1", "PriorityClass"): schedulingv1.PriorityClass,
    ("autoscaling/v1", "Scale"): autoscalingv1.Scale,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): autoscalingv1.HorizontalPodAutoscaler,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): autoscalingv2.HorizontalPodAutoscaler,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): authorizationv1.SelfSubjectAccessReview,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): authorizationv1.SelfSubjectRulesReview,
    ("authorization.k8s.io/v1", "SubjectAccessReview"): authorizationv1.SubjectAccessReview,
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): authorizationv1.LocalSubjectAccessReview,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): authenticationv1.SelfSubjectReview,
    ("authentication.k8s.io/v1", "TokenReview"): authenticationv1.TokenReview,
    ("authentication.k8s.io/v1", "TokenRequest"): authenticationv1.TokenRequest,
    ("rbac.authorization.k8s.io/v1", "Role"): rbacv1.Role,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): rbacv1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): rbacv1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): rbacv1.ClusterRoleBinding,
}
ANY_VERSION: dict[str, type[Message]] = {"DeleteOptions": metav1.DeleteOptions}


def message_type(api_version: str, kind: str) -> type[Message]:
    """The generated class for (apiVersion, kind); 400 for a kind the server does not take as a body."""
    found = KINDS.get((api_version, kind)) or ANY_VERSION.get(kind)
    if found is None:
        raise errors.BadRequest(f'no kind "{kind}" is registered for version "{api_version}" in the protobuf '
                                f'decoder')
    return found
