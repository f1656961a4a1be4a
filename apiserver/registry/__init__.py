"""Per-resource strategies: every rule of every served resource, one module per resource.

The generic REST layer builds its routes, discovery documents and tables from ``all_strategies()``; it asks
each strategy for defaults, validation, status handling, selectable fields and table rows (see ``strategy``).
Besides the ``Strategy`` interface, strategies carry:

* ``name_validator`` overridden where a name is not a DNS subdomain (namespaces: DNS label; services:
  DNS-1035 label);
* ``scale_of`` / ``apply_scale`` / ``validate_scale`` on the ``/scale`` resources (see ``scale``);
* ``prepare_for_finalize_update`` / ``validate_finalize_update`` on namespaces (``/finalize``);
* ``answer`` on the virtual create-only resources, which are never stored (``VirtualStrategy``, see ``virtual``);
* ``items`` on the computed read-only resources, ComponentStatuses (``ReadOnlyStrategy``, see ``readonly``).
"""

from __future__ import annotations

from apiserver.registry.accessreviews import (
    LocalSubjectAccessReviewStrategy,
    SelfSubjectAccessReviewStrategy,
    SelfSubjectRulesReviewStrategy,
    SubjectAccessReviewStrategy,
)
from apiserver.registry.admissionpolicies import (
    ValidatingAdmissionPolicyBindingStrategy,
    ValidatingAdmissionPolicyStrategy,
)
from apiserver.registry.apiservices import APIServiceStrategy
from apiserver.registry.autoscalingv1 import HorizontalPodAutoscalerV1Strategy
from apiserver.registry.certificatesigningrequests import CertificateSigningRequestStrategy
from apiserver.registry.componentstatuses import ComponentStatusStrategy
from apiserver.registry.configmaps import ConfigMapStrategy
from apiserver.registry.controllerrevisions import ControllerRevisionStrategy
from apiserver.registry.cronjobs import CronJobStrategy
from apiserver.registry.csi import (
    CSIDriverStrategy,
    CSINodeStrategy,
    CSIStorageCapacityStrategy,
    VolumeAttachmentStrategy,
)
from apiserver.registry.customresourcedefinitions import CustomResourceDefinitionStrategy
from apiserver.registry.daemonsets import DaemonSetStrategy
from apiserver.registry.deployments import DeploymentStrategy
from apiserver.registry.endpoints import EndpointsStrategy
from apiserver.registry.endpointslices import EndpointSliceStrategy
from apiserver.registry.events import EventStrategy
from apiserver.registry.eventsv1 import EventV1Strategy
from apiserver.registry.flowschemas import FlowSchemaStrategy
from apiserver.registry.horizontalpodautoscalers import HorizontalPodAutoscalerStrategy
from apiserver.registry.ingressclasses import IngressClassStrategy
from apiserver.registry.ingresses import IngressStrategy
from apiserver.registry.jobs import JobStrategy
from apiserver.registry.leases import LeaseStrategy
from apiserver.registry.limitranges import LimitRangeStrategy
from apiserver.registry.namespaces import NamespaceStrategy
from apiserver.registry.networkpolicies import NetworkPolicyStrategy
from apiserver.registry.nodes import NodeStrategy
from apiserver.registry.persistentvolumeclaims import PersistentVolumeClaimStrategy
from apiserver.registry.persistentvolumes import PersistentVolumeStrategy
from apiserver.registry.poddisruptionbudgets import PodDisruptionBudgetStrategy
from apiserver.registry.pods import PodStrategy
from apiserver.registry.podtemplates import PodTemplateStrategy
from apiserver.registry.priorityclasses import PriorityClassStrategy
from apiserver.registry.prioritylevelconfigurations import PriorityLevelConfigurationStrategy
from apiserver.registry.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from apiserver.registry.replicasets import ReplicaSetStrategy
from apiserver.registry.replicationcontrollers import ReplicationControllerStrategy
from apiserver.registry.resourcequotas import ResourceQuotaStrategy
from apiserver.registry.runtimeclasses import RuntimeClassStrategy
from apiserver.registry.secrets import SecretStrategy
from apiserver.registry.selfsubjectreviews import SelfSubjectReviewStrategy
from apiserver.registry.serviceaccounts import ServiceAccountStrategy
from apiserver.registry.services import ServiceStrategy
from apiserver.registry.statefulsets import StatefulSetStrategy
from apiserver.registry.storageclasses import StorageClassStrategy
from apiserver.registry.strategy import Strategy
from apiserver.registry.tokenreviews import TokenReviewStrategy
from apiserver.registry.webhookconfigurations import (
    MutatingWebhookConfigurationStrategy,
    ValidatingWebhookConfigurationStrategy,
)


def all_strategies() -> list[Strategy]:
    """One strategy per served resource version, core group first (discovery lists them in this order; a
    group's first version is its preferred one, and a resource's first version is the one stored)."""
    return [
        PodStrategy(),
        NodeStrategy(),
        NamespaceStrategy(),
        ReplicationControllerStrategy(),
        ServiceStrategy(),
        ConfigMapStrategy(),
        SecretStrategy(),
        ServiceAccountStrategy(),
        EndpointsStrategy(),
        EventStrategy(),
        LimitRangeStrategy(),
        ResourceQuotaStrategy(),
        PersistentVolumeStrategy(),
        PersistentVolumeClaimStrategy(),
        PodTemplateStrategy(),
        ComponentStatusStrategy(),
        DeploymentStrategy(),
        DaemonSetStrategy(),
        ControllerRevisionStrategy(),
        ReplicaSetStrategy(),
        StatefulSetStrategy(),
        HorizontalPodAutoscalerStrategy(),
        HorizontalPodAutoscalerV1Strategy(),
        JobStrategy(),
        CronJobStrategy(),
        LeaseStrategy(),
        EndpointSliceStrategy(),
        EventV1Strategy(),
        FlowSchemaStrategy(),
        PriorityLevelConfigurationStrategy(),
        IngressStrategy(),
        IngressClassStrategy(),
        NetworkPolicyStrategy(),
        RuntimeClassStrategy(),
        PodDisruptionBudgetStrategy(),
        StorageClassStrategy(),
        CSIDriverStrategy(),
        CSINodeStrategy(),
        CSIStorageCapacityStrategy(),
        VolumeAttachmentStrategy(),
        PriorityClassStrategy(),
        MutatingWebhookConfigurationStrategy(),
        ValidatingWebhookConfigurationStrategy(),
        ValidatingAdmissionPolicyStrategy(),
        ValidatingAdmissionPolicyBindingStrategy(),
        APIServiceStrategy(),
        ClusterRoleBindingStrategy(),
        ClusterRoleStrategy(),
        RoleBindingStrategy(),
        RoleStrategy(),
        SelfSubjectReviewStrategy(),
        TokenReviewStrategy(),
        LocalSubjectAccessReviewStrategy(),
        SelfSubjectAccessReviewStrategy(),
        SelfSubjectRulesReviewStrategy(),
        SubjectAccessReviewStrategy(),
        CertificateSigningRequestStrategy(),
        CustomResourceDefinitionStrategy(),
    ]
