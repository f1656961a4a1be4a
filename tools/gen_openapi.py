#!/usr/bin/env python
"""Generate ``apiserver/openapi/swagger.json``: the OpenAPI 2.0 document kube-apiserver would serve for our API.

Why generated, and from what: kubectl needs the server's OpenAPI (client-side validation, ``explain``, deciding
whether ``?fieldValidation=Strict`` is supported), and the only machine-readable description of the Kubernetes API
we have offline is the official ``kubernetes`` Python client:

* its models give, per type, the description (class docstring), the fields (``openapi_types`` /
  ``attribute_map``), each field's description and whether it is required (pydantic ``model_fields``);
* its API classes give, per operation, the description (method docstring), the query parameters with their
  descriptions, the body and the response types; asking the client to *serialize* a request (``_x_serialize``)
  gives the HTTP method, the path and the wire name of each parameter.

What the client cannot tell lives in the tables below, one table per fact:

* ``RESOURCES`` / ``SUBRESOURCES``: what this apiserver serves (the same facts as the Strategy classes under
  ``apiserver/registry``; kept here because the generator must not import the server);
* ``LEAF_TYPES``: Go types the client flattens to ``str``/``datetime``/``object`` (Quantity, MicroTime, FieldsV1 …);
* ``KUBE_REF_DESCRIPTIONS`` (``tools/openapi_ref_descriptions.json``): kube-apiserver v1.32's descriptions of every
  field whose type is another object (``$ref``, lists and maps of them), which the client's generator drops (or
  words as a later release does), keyed ``<definition>.<field>``; taken from the Kubernetes v1.32 OpenAPI as the
  ``kubernetes-validate`` package ships it
  (``--import-kube-definitions .../v1.32.0-local/_definitions.json`` rewrites the file);
* ``KUBE_INT_FORMATS`` (``tools/openapi_int_formats.json``, from the same document): each integer field's Go type
  (``int32``/``int64``) for the groups with no ``generated.proto`` under ``apiserver/protobuf/proto``;
* ``PATCH_STRATEGIES``: ``x-kubernetes-patch-strategy`` / ``-merge-key`` (``kubectl apply`` diffs lists with them).
* integer formats (``int32``/``int64``, which the decoder range-checks as Go does): read from the wire schema
  ``apiserver/protobuf/proto`` (upstream's ``generated.proto`` types are the Go types), plus ``NEWER_INT_FORMATS``
  for the fields the client has that the v1.32 schema lacks.
* ``NEWER_THAN_SERVED``: fields the client has from releases after v1.32 (their types would drag alpha APIs in).
* ``METRICS_DEFINITIONS``: ``metrics.k8s.io/v1beta1`` (NodeMetrics, PodMetrics), which the client has no models
  for: written out as metrics-server publishes them; their operations reuse the core nodes/pods list and read
  operations' parameters (``metrics_operations``).

The output is deterministic (sorted keys, no timestamps). Rerun after changing a table::

    .venv/bin/python tools/gen_openapi.py           # rewrite the file
    .venv/bin/python tools/gen_openapi.py --check   # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import kubernetes.client as kc
from pydantic import BaseModel

Schema = dict[str, Any]
OUTPUT = Path(__file__).resolve().parent.parent / "apiserver" / "openapi" / "swagger.json"
REF_DESCRIPTIONS_FILE = Path(__file__).resolve().parent / "openapi_ref_descriptions.json"
KUBE_REF_DESCRIPTIONS: dict[str, str] = json.loads(REF_DESCRIPTIONS_FILE.read_text())
INT_FORMATS_FILE = Path(__file__).resolve().parent / "openapi_int_formats.json"
KUBE_INT_FORMATS: dict[str, str] = json.loads(INT_FORMATS_FILE.read_text())
PROTO_DIR = Path(__file__).resolve().parent.parent / "apiserver" / "protobuf" / "proto"
INFO = {"title": "Kubernetes", "version": "v1.32.0"}


# --- what we serve -----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GVK:
    group: str
    version: str
    kind: str

    def to_dict(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, "version": self.version}


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource, as discovery lists it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...] = ()
    model: str = ""  # the Python client's class when it is not ``V1<Kind>``

    @property
    def gvk(self) -> GVK:
        return GVK(self.group, self.version, self.kind)

    @property
    def model_name(self) -> str:
        return self.model or f"V1{self.kind}"


@dataclass(frozen=True, slots=True)
class Subresource:
    """A ``{name}/<sub>`` endpoint: its HTTP methods and the kind of its body when it is not the parent's."""

    methods: tuple[str, ...]
    gvk: GVK | None = None
    connect: bool = False  # exec/attach style: x-kubernetes-action "connect", opaque streams
    produces: tuple[str, ...] | None = None


ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
GROUP_VERSIONS = (("", "v1"), ("admissionregistration.k8s.io", "v1"), ("apiextensions.k8s.io", "v1"),
                  ("apiregistration.k8s.io", "v1"), ("apps", "v1"),
                  ("authentication.k8s.io", "v1"), ("authorization.k8s.io", "v1"),
                  ("autoscaling", "v1"), ("autoscaling", "v2"), ("batch", "v1"), ("certificates.k8s.io", "v1"),
                  ("coordination.k8s.io", "v1"), ("discovery.k8s.io", "v1"), ("events.k8s.io", "v1"),
                  ("flowcontrol.apiserver.k8s.io", "v1"), ("networking.k8s.io", "v1"),
                  ("node.k8s.io", "v1"), ("policy", "v1"), ("rbac.authorization.k8s.io", "v1"),
                  ("scheduling.k8s.io", "v1"), ("storage.k8s.io", "v1"))
RESOURCES = (
    Resource("", "v1", "Binding", "bindings", True, ("create",)),
    Resource("", "v1", "ComponentStatus", "componentstatuses", False, ("get", "list")),
    Resource("", "v1", "ConfigMap", "configmaps", True, ALL_VERBS),
    Resource("", "v1", "Endpoints", "endpoints", True, ALL_VERBS),
    Resource("", "v1", "Event", "events", True, ALL_VERBS, model="CoreV1Event"),
    Resource("", "v1", "LimitRange", "limitranges", True, ALL_VERBS),
    Resource("", "v1", "Namespace", "namespaces", False,
             ("create", "delete", "get", "list", "patch", "update", "watch"), ("status",)),
    Resource("", "v1", "Node", "nodes", False, ALL_VERBS, ("status", "proxy")),
    Resource("", "v1", "PodTemplate", "podtemplates", True, ALL_VERBS),
    Resource("", "v1", "Pod", "pods", True, ALL_VERBS,
             ("attach", "binding", "eviction", "exec", "log", "proxy", "status")),
    Resource("", "v1", "PersistentVolume", "persistentvolumes", False, ALL_VERBS, ("status",)),
    Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ALL_VERBS, ("status",)),
    Resource("", "v1", "ReplicationController", "replicationcontrollers", True, ALL_VERBS, ("scale", "status")),
    Resource("", "v1", "ResourceQuota", "resourcequotas", True, ALL_VERBS, ("status",)),
    Resource("", "v1", "Secret", "secrets", True, ALL_VERBS),
    Resource("", "v1", "Service", "services", True, ALL_VERBS, ("status", "proxy")),
    Resource("", "v1", "ServiceAccount", "serviceaccounts", True, ALL_VERBS, ("token",)),
    Resource("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
             False, ALL_VERBS),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False,
             ALL_VERBS, ("status",)),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
             "validatingadmissionpolicybindings", False, ALL_VERBS),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
             "validatingwebhookconfigurations", False, ALL_VERBS),
    Resource("apiregistration.k8s.io", "v1", "APIService", "apiservices", False, ALL_VERBS, ("status",)),
    Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ALL_VERBS,
             ("status",)),
    Resource("apps", "v1", "ControllerRevision", "controllerrevisions", True, ALL_VERBS),
    Resource("apps", "v1", "DaemonSet", "daemonsets", True, ALL_VERBS, ("status",)),
    Resource("apps", "v1", "Deployment", "deployments", True, ALL_VERBS, ("scale", "status")),
    Resource("apps", "v1", "ReplicaSet", "replicasets", True, ALL_VERBS, ("scale", "status")),
    Resource("apps", "v1", "StatefulSet", "statefulsets", True, ALL_VERBS, ("scale", "status")),
    Resource("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, ("create",)),
    Resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, ("create",)),
    Resource("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", True,
             ("create",)),
    Resource("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
             ("create",)),
    Resource("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
             ("create",)),
    Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, ("create",)),
    Resource("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ALL_VERBS, ("status",)),
    Resource("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ALL_VERBS, ("status",),
             model="V2HorizontalPodAutoscaler"),
    Resource("batch", "v1", "CronJob", "cronjobs", True, ALL_VERBS, ("status",)),
    Resource("batch", "v1", "Job", "jobs", True, ALL_VERBS, ("status",)),
    Resource("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", False, ALL_VERBS,
             ("approval", "status")),
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True, ALL_VERBS),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, ALL_VERBS),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, ALL_VERBS),
    Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", True, ALL_VERBS),
    Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, ALL_VERBS),
    Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, ALL_VERBS),
    Resource("events.k8s.io", "v1", "Event", "events", True, ALL_VERBS, model="EventsV1Event"),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", False, ALL_VERBS, ("status",)),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", False,
             ALL_VERBS, ("status",)),
    Resource("networking.k8s.io", "v1", "Ingress", "ingresses", True, ALL_VERBS, ("status",)),
    Resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False, ALL_VERBS),
    Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ALL_VERBS),
    Resource("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, ALL_VERBS),
    Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ALL_VERBS, ("status",)),
    Resource("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False, ALL_VERBS),
    Resource("storage.k8s.io", "v1", "CSINode", "csinodes", False, ALL_VERBS),
    Resource("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", True, ALL_VERBS),
    Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ALL_VERBS),
    Resource("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", False, ALL_VERBS, ("status",)),
    Resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ALL_VERBS),
)
SUBRESOURCES = {
    "approval": Subresource(("get", "put", "patch")),
    "attach": Subresource(("get", "post"), GVK("", "v1", "PodAttachOptions"), connect=True, produces=("*/*",)),
    "binding": Subresource(("post",), GVK("", "v1", "Binding")),
    "eviction": Subresource(("post",), GVK("policy", "v1", "Eviction")),
    "exec": Subresource(("get", "post"), GVK("", "v1", "PodExecOptions"), connect=True, produces=("*/*",)),
    "log": Subresource(("get",), produces=("text/plain",)),
    # pods/services/nodes proxy: every method, with and without a {path} after it
    "proxy": Subresource(("get", "post", "put", "patch", "delete", "head", "options"), connect=True,
                         produces=("*/*",)),
    "scale": Subresource(("get", "put", "patch"), GVK("autoscaling", "v1", "Scale")),
    "status": Subresource(("get", "put", "patch")),
    "token": Subresource(("post",), GVK("authentication.k8s.io", "v1", "TokenRequest")),
}
# Kinds that are request/response bodies of subresources and need their own definition.
SUBRESOURCE_MODELS = {"Eviction": "V1Eviction", "Scale": "V1Scale", "TokenRequest": "AuthenticationV1TokenRequest"}
# Media types this apiserver speaks; kube-apiserver adds yaml, protobuf and cbor.
PRODUCES = ("application/json",)
PRODUCES_WATCH = ("application/json", "application/json;stream=watch")
CONSUMES = ("*/*",)
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json")
# Alpha query parameters the Python client knows and this apiserver does not implement.
UNSERVED_PARAMETERS = frozenset({"shardSelector"})


# --- definition names --------------------------------------------------------------------------------------------

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
META_MODELS = frozenset({
    "V1APIGroup", "V1APIGroupList", "V1APIResource", "V1APIResourceList", "V1APIVersions", "V1Condition",
    "V1DeleteOptions", "V1GroupVersionForDiscovery", "V1LabelSelector", "V1LabelSelectorRequirement", "V1ListMeta",
    "V1ManagedFieldsEntry", "V1ObjectMeta", "V1OwnerReference", "V1Preconditions", "V1ServerAddressByClientCIDR",
    "V1ShardInfo", "V1Status", "V1StatusCause", "V1StatusDetails", "V1WatchEvent",
})
VERSION_PACKAGE = "io.k8s.apimachinery.pkg.version"
TIME = f"{META}.Time"
MICRO_TIME = f"{META}.MicroTime"
FIELDS_V1 = f"{META}.FieldsV1"
PATCH = f"{META}.Patch"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"
APIEXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"
# apiextensions' hand-marshalled types: any JSON value, a schema or a bool/array, an empty marker struct.
CRD_JSON = f"{APIEXTENSIONS}.JSON"
CRD_PROPS_OR_ARRAY = f"{APIEXTENSIONS}.JSONSchemaPropsOrArray"
CRD_PROPS_OR_BOOL = f"{APIEXTENSIONS}.JSONSchemaPropsOrBool"
CRD_PROPS_OR_STRINGS = f"{APIEXTENSIONS}.JSONSchemaPropsOrStringArray"
CRD_STATUS_SUBRESOURCE = f"{APIEXTENSIONS}.CustomResourceSubresourceStatus"

# Go types without a Python model, spelled as kube-apiserver spells them (v2: one type + format).
SCALAR_DEFINITIONS: dict[str, Schema] = {
    CRD_JSON: {"description": "JSON represents any valid JSON value. These types are supported: bool, int64, "
                              "float64, string, []interface{}, map[string]interface{} and nil."},
    CRD_PROPS_OR_ARRAY: {"description": "JSONSchemaPropsOrArray represents a value that can either be a "
                                        "JSONSchemaProps or an array of JSONSchemaProps. Mainly here for "
                                        "serialization purposes."},
    CRD_PROPS_OR_BOOL: {"description": "JSONSchemaPropsOrBool represents JSONSchemaProps or a boolean value. "
                                       "Defaults to true for the boolean property."},
    CRD_PROPS_OR_STRINGS: {"description": "JSONSchemaPropsOrStringArray represents a JSONSchemaProps or a string "
                                          "array."},
    CRD_STATUS_SUBRESOURCE: {
        "description": "CustomResourceSubresourceStatus defines how to serve the status subresource for "
                       "CustomResources. Status is represented by the `.status` JSON path inside of a "
                       "CustomResource. When set, * exposes a /status subresource for the custom resource * PUT "
                       "requests to the /status subresource take a custom resource object, and ignore changes to "
                       "anything except the status stanza * PUT/POST/PATCH requests to the custom resource ignore "
                       "changes to the status stanza",
        "type": "object"},
    TIME: {
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  "
                       "Wrappers are provided for many of the factory methods that the time package offers.",
        "format": "date-time", "type": "string"},
    MICRO_TIME: {
        "description": "MicroTime is version of Time with microsecond level precision.",
        "format": "date-time", "type": "string"},
    FIELDS_V1: {
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key "
                       "is either a '.' representing the field itself, and will always map to an empty set, or a "
                       "string representing a sub-field or item. The string will follow one of these four formats: "
                       "'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', "
                       "where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is "
                       "position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields "
                       "to their unique values If a key maps to an empty Fields value, the field that key represents "
                       "is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
        "type": "object"},
    PATCH: {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        "type": "object"},
    QUANTITY: {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient "
                       "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors."
                       "\n\nThe serialization format is:\n\n``` <quantity>        ::= <signedNumber><suffix>\n\n\t"
                       "(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n<digit>           "
                       "::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>          ::= "
                       "<digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | \"-\" "
                       "<signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | "
                       "<decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t"
                       "(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n"
                       "<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but "
                       "1000 = 1k; I didn't choose the capitalization.)\n\n<decimalExponent> ::= \"e\" "
                       "<signedNumber> | \"E\" <signedNumber> ```\n\nNo matter which of the three exponent forms is "
                       "used, no quantity may represent a number greater than 2^63-1 in magnitude, nor may it have "
                       "more than 3 decimal places. Numbers larger or more precise will be capped or rounded up. "
                       "(E.g.: 0.1m will rounded up to 1m.)",
        "type": "string"},
    INT_OR_STRING: {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to "
                       "have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string", "type": "string"},
    RAW_EXTENSION: {
        "description": "RawExtension is used to hold extensions in external versions.\n\nTo use this, make a field "
                       "which has RawExtension as its type in your external, versioned struct, and Object in your "
                       "internal struct.",
        "type": "object"},
}

# Fields whose Go type the Python client flattens: (model, json field) -> definition of the leaf value.
LEAF_TYPES: dict[tuple[str, str], str] = {
    **{(m, f): QUANTITY for m, f in [
        ("V1ContainerStatus", "allocatedResources"), ("V1EmptyDirVolumeSource", "sizeLimit"),
        ("V1LimitRangeItem", "default"), ("V1LimitRangeItem", "defaultRequest"), ("V1LimitRangeItem", "max"),
        ("V1LimitRangeItem", "maxLimitRequestRatio"), ("V1LimitRangeItem", "min"), ("V1ResourceQuotaSpec", "hard"),
        ("V1ResourceQuotaStatus", "hard"), ("V1ResourceQuotaStatus", "used"),
        ("V1NodeAllocatableMappedResources", "quantity"), ("V1NodeAllocatableOverheadResources", "perContainer"),
        ("V1NodeAllocatableOverheadResources", "perPod"), ("V1NodeStatus", "allocatable"),
        ("V1NodeStatus", "capacity"), ("V1PodSpec", "overhead"), ("V1PodStatus", "allocatedResources"),
        ("V1ResourceFieldSelector", "divisor"), ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"), ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"), ("V2MetricTarget", "averageValue"), ("V2MetricTarget", "value"),
        ("V2MetricValueStatus", "averageValue"), ("V2MetricValueStatus", "value"),
        ("V1PersistentVolumeSpec", "capacity"), ("V1PersistentVolumeClaimStatus", "capacity"),
        ("V1PersistentVolumeClaimStatus", "allocatedResources"), ("V1CSIStorageCapacity", "capacity"),
        ("V1CSIStorageCapacity", "maximumVolumeSize"),
    ]},
    **{(m, f): MICRO_TIME for m, f in [
        ("CoreV1Event", "eventTime"), ("CoreV1EventSeries", "lastObservedTime"), ("V1LeaseSpec", "acquireTime"),
        ("V1LeaseSpec", "renewTime"),
    ]},
    ("V1ManagedFieldsEntry", "fieldsV1"): FIELDS_V1,
    ("V1WatchEvent", "object"): RAW_EXTENSION,
    ("V1ControllerRevision", "data"): RAW_EXTENSION,
    ("V1CustomResourceSubresources", "status"): CRD_STATUS_SUBRESOURCE,
    ("V1JSONSchemaProps", "additionalItems"): CRD_PROPS_OR_BOOL,
    ("V1JSONSchemaProps", "additionalProperties"): CRD_PROPS_OR_BOOL,
    ("V1JSONSchemaProps", "default"): CRD_JSON,
    ("V1JSONSchemaProps", "dependencies"): CRD_PROPS_OR_STRINGS,
    ("V1JSONSchemaProps", "enum"): CRD_JSON,
    ("V1JSONSchemaProps", "example"): CRD_JSON,
    ("V1JSONSchemaProps", "items"): CRD_PROPS_OR_ARRAY,
}

OBJECT_METADATA = ("Standard object's metadata. More info: "
                   "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
LIST_METADATA = ("Standard list metadata. More info: "
                 "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")

# Fields the Python client has from Kubernetes releases after v1.32, left out of the v1.32 document.
NEWER_THAN_SERVED: frozenset[tuple[str, str]] = frozenset({
    ("V1JobSpec", "scheduling"), ("V2HPAScalingRules", "tolerance"),
    ("V1CustomResourceDefinitionStatus", "observedGeneration"),
    ("V1CustomResourceDefinitionCondition", "observedGeneration"),
    ("V1CSIDriverSpec", "nodeAllocatableUpdatePeriodSeconds"), ("V1VolumeError", "errorCode"),
})

# Integer fields the client models have that the v1.32 wire schema (apiserver/protobuf/proto) does not: their Go
# types, (definition name, json field) -> format. Ids and counts of generations are int64, the rest int32.
NEWER_INT_FORMATS: dict[tuple[str, str], str] = {
    ("io.k8s.api.apps.v1.DeploymentStatus", "terminatingReplicas"): "int32",
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "terminatingReplicas"): "int32",
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition", "observedGeneration"): "int64",
    ("io.k8s.api.core.v1.ClusterTrustBundleProjection", "user"): "int64",
    ("io.k8s.api.core.v1.ConfigMapVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes", "values"): "int32",
    ("io.k8s.api.core.v1.DownwardAPIVolumeFile", "user"): "int64",
    ("io.k8s.api.core.v1.DownwardAPIVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.EmptyDirVolumeSource", "mode"): "int32",
    ("io.k8s.api.core.v1.EvictionResponder", "priority"): "int32",
    ("io.k8s.api.core.v1.KeyToPath", "user"): "int64",
    ("io.k8s.api.core.v1.NodeSwapStatus", "capacity"): "int64",
    ("io.k8s.api.core.v1.PodCertificateProjection", "maxExpirationSeconds"): "int32",
    ("io.k8s.api.core.v1.PodCertificateProjection", "user"): "int64",
    ("io.k8s.api.core.v1.PodCondition", "observedGeneration"): "int64",
    ("io.k8s.api.core.v1.PodStatus", "observedGeneration"): "int64",
    ("io.k8s.api.core.v1.ProjectedVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.SecretVolumeSource", "defaultUser"): "int64",
    ("io.k8s.api.core.v1.ServiceAccountTokenProjection", "user"): "int64",
}

_PROTO_INT = re.compile(r"\s+(?:optional|repeated)\s+(int32|int64)\s+(\w+)\s*=")


def proto_int_formats(directory: Path = PROTO_DIR) -> dict[tuple[str, str], str]:
    """(definition name, json field) -> ``int32``/``int64`` for every integer field of the wire schema: a
    ``generated.proto`` message is named as its OpenAPI definition (``k8s.io.api.core.v1`` -> ``io.k8s.api.core.v1``)
    and its field names are the JSON names."""
    formats = dict(NEWER_INT_FORMATS)
    for key, go_type in KUBE_INT_FORMATS.items():
        definition, _, field = key.rpartition(".")
        formats[(definition, field)] = go_type
    for path in sorted(directory.rglob("*.proto")):
        package = message = ""
        for line in path.read_text().splitlines():
            if m := re.match(r"package ([\w.]+);", line):
                package = "io.k8s." + m[1].removeprefix("k8s.io.")
            elif m := re.match(r"message (\w+) \{", line):
                message = m[1]
            elif m := _PROTO_INT.match(line):
                formats[(f"{package}.{message}", m[2])] = m[1]
    return formats


# Go struct tags ``patchStrategy``/``patchMergeKey``: (model, json field) -> (strategy, merge key or "").
PATCH_STRATEGIES: dict[tuple[str, str], tuple[str, str]] = {
    ("V1Container", "env"): ("merge", "name"),
    ("V1Container", "ports"): ("merge", "containerPort"),
    ("V1Container", "volumeDevices"): ("merge", "devicePath"),
    ("V1Container", "volumeMounts"): ("merge", "mountPath"),
    ("V1EphemeralContainer", "env"): ("merge", "name"),
    ("V1EphemeralContainer", "ports"): ("merge", "containerPort"),
    ("V1EphemeralContainer", "volumeDevices"): ("merge", "devicePath"),
    ("V1EphemeralContainer", "volumeMounts"): ("merge", "mountPath"),
    ("V1DeploymentSpec", "strategy"): ("retainKeys", ""),
    ("V1DeploymentStatus", "conditions"): ("merge", "type"),
    ("V1JobStatus", "conditions"): ("merge", "type"),
    ("V1NamespaceStatus", "conditions"): ("merge", "type"),
    ("V1NodeSpec", "podCIDRs"): ("merge", ""),
    ("V1NodeStatus", "addresses"): ("merge", "type"),
    ("V1NodeStatus", "conditions"): ("merge", "type"),
    ("V1ObjectMeta", "finalizers"): ("merge", ""),
    ("V1ObjectMeta", "ownerReferences"): ("merge", "uid"),
    ("V1PodSpec", "containers"): ("merge", "name"),
    ("V1PodSpec", "ephemeralContainers"): ("merge", "name"),
    ("V1PodSpec", "hostAliases"): ("merge", "ip"),
    ("V1PodSpec", "imagePullSecrets"): ("merge", "name"),
    ("V1PodSpec", "initContainers"): ("merge", "name"),
    ("V1PodSpec", "resourceClaims"): ("merge,retainKeys", "name"),
    ("V1PodSpec", "schedulingGates"): ("merge", "name"),
    ("V1PodSpec", "topologySpreadConstraints"): ("merge", "topologyKey"),
    ("V1PodSpec", "volumes"): ("merge,retainKeys", "name"),
    ("V1PodStatus", "conditions"): ("merge", "type"),
    ("V1PodStatus", "hostIPs"): ("merge", "ip"),
    ("V1PodStatus", "podIPs"): ("merge", "ip"),
    ("V1PodStatus", "resourceClaimStatuses"): ("merge,retainKeys", "name"),
    ("V1ReplicaSetStatus", "conditions"): ("merge", "type"),
    ("V1ReplicationControllerStatus", "conditions"): ("merge", "type"),
    ("V1ServiceAccount", "secrets"): ("merge", "name"),
    ("V1ServiceSpec", "ports"): ("merge", "port"),
    ("V1ServiceStatus", "conditions"): ("merge", "type"),
}


# Groups whose Go types live outside k8s.io/api, named by their own Go package as kube-apiserver names them.
GROUP_PACKAGES = {"apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
                  "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"}


def group_package(group: str, version: str) -> str:
    """``io.k8s.api.<first label of the group>.<version>``; the core group is ``core``; ``GROUP_PACKAGES``."""
    if group in GROUP_PACKAGES:
        return f"{GROUP_PACKAGES[group]}.{version}"
    return f"io.k8s.api.{group.split('.')[0] if group else 'core'}.{version}"


_CLIENT_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])")


def go_type_name(model: str) -> str:
    """``V1Pod`` → ``Pod``, ``CoreV1Event`` → ``Event``: the client prefixes the Go name with its group-version."""
    return "Info" if model == "VersionInfo" else _CLIENT_PREFIX.sub("", model)


def model_class(name: str) -> type[Any]:
    """A client model class; typed loosely because ``openapi_types``/``attribute_map`` are generated class data."""
    cls = getattr(kc, name)
    assert isinstance(cls, type) and issubclass(cls, BaseModel), name
    return cls


def served_fields(name: str) -> dict[str, str]:
    """A model's ``openapi_types`` without the fields ``NEWER_THAN_SERVED`` names."""
    cls = model_class(name)
    return {attr: t for attr, t in cls.openapi_types.items()
            if (name, cls.attribute_map[attr]) not in NEWER_THAN_SERVED}


def referenced_models(type_string: str) -> list[str]:
    """Model names inside an ``openapi_types`` entry such as ``List[V1Container]`` or ``Dict[str, str]``."""
    return [t for t in re.findall(r"[A-Za-z_]\w*", type_string)
            if isinstance(getattr(kc, t, None), type) and issubclass(getattr(kc, t), BaseModel)]


# --- models -> definitions ---------------------------------------------------------------------------------------

class Definitions:
    """The definitions reachable from the served kinds, named as kube-apiserver names them.

    A model's Go package is the one of the first served kind that reaches it (core kinds are walked first, so
    PodTemplateSpec is core even though Deployment embeds it); the meta/v1 types are listed explicitly.
    """

    def __init__(self, roots: list[tuple[str, str]], gvks: dict[str, list[GVK]]) -> None:
        self.gvks = gvks
        self.package: dict[str, str] = {m: META for m in META_MODELS}
        for model, package in roots:
            stack = [model]
            while stack:
                name = stack.pop()
                if name in self.package and name != model:
                    continue
                self.package.setdefault(name, package)
                for t in served_fields(name).values():
                    stack.extend(r for r in referenced_models(t) if r not in self.package)
        self.reachable = self._closure([m for m, _ in roots])
        self.int_formats = proto_int_formats()
        names = [self.name(m) for m in self.reachable]
        assert len(set(names)) == len(names), "two models map to one definition name"

    def _closure(self, roots: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        stack = list(roots)
        while stack:
            name = stack.pop()
            if name not in seen:
                seen[name] = None
                for t in served_fields(name).values():
                    stack.extend(referenced_models(t))
        return sorted(seen)

    def name(self, model: str) -> str:
        return f"{self.package[model]}.{go_type_name(model)}"

    def ref(self, model: str) -> Schema:
        return {"$ref": f"#/definitions/{self.name(model)}"}

    def all(self) -> dict[str, Schema]:
        out = {self.name(m): self.definition(m) for m in self.reachable}
        out.update(SCALAR_DEFINITIONS)
        return out

    def definition(self, model: str) -> Schema:
        cls = model_class(model)
        properties: dict[str, Schema] = {}
        required: list[str] = []
        fields = {field.serialization_alias or attr: field for attr, field in cls.model_fields.items()}
        for attr, type_string in served_fields(model).items():
            json_name = cls.attribute_map[attr]
            field = fields[json_name]
            properties[json_name] = self.property(model, json_name, type_string, field.annotation,
                                                  field.description)
            self.set_int_format(self.name(model), json_name, properties[json_name])
            if field.is_required():
                required.append(json_name)
        out: Schema = {"description": type_description(cls), "properties": properties, "type": "object"}
        if required:
            out["required"] = required
        if model in self.gvks:
            out["x-kubernetes-group-version-kind"] = [g.to_dict() for g in self.gvks[model]]
        return out

    def set_int_format(self, definition: str, json_name: str, schema: Schema) -> None:
        """Give an integer field (or an integer list's items) its Go type as kube-apiserver's document does."""
        scalar = schema.get("items") if schema.get("type") == "array" else schema
        if not isinstance(scalar, dict) or scalar.get("type") != "integer":
            return
        try:
            scalar["format"] = self.int_formats[(definition, json_name)]
        except KeyError:
            raise ValueError(f"{definition}.{json_name}: integer field without a Go type; add it to "
                             f"NEWER_INT_FORMATS") from None

    def property(self, model: str, json_name: str, type_string: str, annotation: Any,
                 description: str | None) -> Schema:
        schema = self.type_schema(type_string, LEAF_TYPES.get((model, json_name)), annotation, (model, json_name))
        text = (KUBE_REF_DESCRIPTIONS.get(f"{self.name(model)}.{json_name}") or description
                or _metadata_description(json_name, type_string))
        if text:
            schema["description"] = text
        if (model, json_name) in PATCH_STRATEGIES:
            strategy, key = PATCH_STRATEGIES[(model, json_name)]
            if key:
                schema["x-kubernetes-patch-merge-key"] = key
            schema["x-kubernetes-patch-strategy"] = strategy
        return schema

    def type_schema(self, t: str, leaf: str | None, annotation: Any, where: tuple[str, str]) -> Schema:
        """Schema of an ``openapi_types`` string; ``leaf`` replaces the innermost scalar (Quantity, MicroTime …)."""
        if m := re.fullmatch(r"List\[(.+)\]", t):
            return {"items": self.type_schema(m[1], leaf, None, where), "type": "array"}
        if m := re.fullmatch(r"Dict\[str, (.+)\]", t):
            return {"additionalProperties": self.type_schema(m[1], leaf, None, where), "type": "object"}
        if leaf:
            return {"$ref": f"#/definitions/{leaf}"}
        if t in _PRIMITIVES:
            return dict(_PRIMITIVES[t])
        if t == "datetime":
            return {"$ref": f"#/definitions/{TIME}"}
        if t == "object":
            if _is_int_or_string(annotation):
                return {"$ref": f"#/definitions/{INT_OR_STRING}"}
            raise ValueError(f"{where}: untyped field; say what Go type it is in LEAF_TYPES")
        return self.ref(t)


_PRIMITIVES: dict[str, Schema] = {
    "str": {"type": "string"}, "int": {"type": "integer"}, "float": {"format": "double", "type": "number"},
    "bool": {"type": "boolean"}, "bytes": {"format": "byte", "type": "string"},
}


def _is_int_or_string(annotation: Any) -> bool:
    """The client types IntOrString fields as ``Union[int, str]`` (plus ``None`` when optional)."""
    leaves = {a if not hasattr(a, "__metadata__") else typing.get_args(a)[0] for a in _union_args(annotation)}
    return leaves - {type(None)} == {int, str}


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _metadata_description(json_name: str, type_string: str) -> str:
    if json_name != "metadata":
        return ""
    return {"V1ObjectMeta": OBJECT_METADATA, "V1ListMeta": LIST_METADATA}.get(type_string, "")


def type_description(cls: type) -> str:
    """The model's docstring up to the generator's boilerplate ``Attributes:`` section."""
    return inspect.cleandoc(cls.__doc__ or "").split("\n\nAttributes:")[0].strip()


# --- operations -> paths -----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Operation:
    """One HTTP operation; ``python`` names the client method that documents it (``None`` for watch paths)."""

    path: str
    method: str
    operation_id: str
    tag: str
    api: str
    python: str | None
    action: str | None = None
    gvk: GVK | None = None
    params_from: str | None = None  # deprecated watch paths take the parameters of this list method
    produces: tuple[str, ...] = PRODUCES
    consumes: tuple[str, ...] = CONSUMES

    @property
    def documented_by(self) -> str:
        """The client method whose signature lists this operation's parameters."""
        name = self.python or self.params_from
        assert name, self
        return name


def camel(group: str) -> str:
    """``coordination.k8s.io`` → ``Coordination``, ``rbac.authorization.k8s.io`` → ``RbacAuthorization``."""
    name = group.removesuffix(".k8s.io") or "core"
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[.-]", name))


def op_tag(group: str, version: str) -> str:
    """Operation-id infix ``CoreV1`` / ``AppsV1``."""
    return f"{camel(group)}{version[:1].upper()}{version[1:]}"


def swagger_tag(group: str, version: str = "") -> str:
    """``core_v1``, ``apps_v1``; the group alone for the group's discovery path."""
    name = camel(group)
    name = name[:1].lower() + name[1:]
    return f"{name}_{version}" if version else name


def prefix(group: str, version: str) -> str:
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


def snake(name: str) -> str:
    """The Python client's method names: ``listNamespacedPod`` → ``list_namespaced_pod``, ``APIService`` →
    ``api_service`` (a run of capitals is one word)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def resource_operations(r: Resource) -> Iterator[Operation]:
    """kube-apiserver's endpoints for one resource, in its naming scheme (``listCoreV1NamespacedPod`` …)."""
    t = op_tag(r.group, r.version)
    tag = swagger_tag(r.group, r.version)
    api = f"{t}Api"
    ns = "Namespaced" if r.namespaced else ""
    scope = "/namespaces/{namespace}" if r.namespaced else ""
    base = prefix(r.group, r.version)
    collection = f"{base}{scope}/{r.plural}"
    item = f"{collection}/{{name}}"
    k = r.kind

    def op(path: str, method: str, action: str, op_id: str, **kw: Any) -> Operation:
        python = None if "params_from" in kw else snake(op_id.replace(t, "", 1))
        return Operation(path, method, op_id, tag, api, python, action, kw.pop("gvk", r.gvk), **kw)

    if "list" in r.verbs:
        yield op(collection, "get", "list", f"list{t}{ns}{k}", produces=PRODUCES_WATCH)
        if r.namespaced:
            yield op(f"{base}/{r.plural}", "get", "list", f"list{t}{k}ForAllNamespaces", produces=PRODUCES_WATCH)
    if "create" in r.verbs:
        yield op(collection, "post", "post", f"create{t}{ns}{k}")
    if "deletecollection" in r.verbs:
        yield op(collection, "delete", "deletecollection", f"delete{t}Collection{ns}{k}")
    for verb, method, action, name in (("get", "get", "get", "read"), ("update", "put", "put", "replace"),
                                       ("patch", "patch", "patch", "patch"), ("delete", "delete", "delete", "delete")):
        if verb in r.verbs:
            yield op(item, method, action, f"{name}{t}{ns}{k}", consumes=PATCH_TYPES if verb == "patch" else CONSUMES)
    if "watch" in r.verbs:
        lister = snake(f"list{ns}{k}")
        yield op(f"{base}/watch{scope}/{r.plural}", "get", "watchlist", f"watch{t}{ns}{k}List",
                 params_from=lister, produces=PRODUCES_WATCH)
        yield op(f"{base}/watch{scope}/{r.plural}/{{name}}", "get", "watch", f"watch{t}{ns}{k}",
                 params_from=lister, produces=PRODUCES_WATCH)
        if r.namespaced:
            yield op(f"{base}/watch/{r.plural}", "get", "watchlist", f"watch{t}{k}ListForAllNamespaces",
                     params_from=snake(f"list{k}ForAllNamespaces"), produces=PRODUCES_WATCH)
    for sub in r.subresources:
        spec = SUBRESOURCES[sub]
        for method in spec.methods:
            suffix = f"{ns}{k}{sub.capitalize()}"
            if spec.connect:
                op_id, action = f"connect{method.capitalize()}{t}{suffix}", "connect"
            else:
                op_id = {"get": "read", "put": "replace", "patch": "patch", "post": "create"}[method] + t + suffix
                action = method
            paths = ((f"{item}/{sub}", op_id), (f"{item}/{sub}/{{path}}", f"{op_id}WithPath")) if sub == "proxy" \
                else ((f"{item}/{sub}", op_id),)
            for path, path_op_id in paths:
                gvk = GVK(r.group, r.version, f"{r.kind}ProxyOptions") if sub == "proxy" else spec.gvk or r.gvk
                yield op(path, method, action, path_op_id, gvk=gvk, produces=spec.produces or PRODUCES,
                         consumes=CONSUMES if spec.connect else PATCH_TYPES if method == "patch" else CONSUMES)


def discovery_operations() -> Iterator[Operation]:
    """``/api/``, ``/apis/``, each group and group-version, ``/version/``: answered by discovery."""
    yield Operation("/api/", "get", "getCoreAPIVersions", "core", "CoreApi", "get_api_versions")
    yield Operation("/apis/", "get", "getAPIVersions", "apis", "ApisApi", "get_api_versions")
    yield Operation("/version/", "get", "getCodeVersion", "version", "VersionApi", "get_code")
    for group, version in GROUP_VERSIONS:
        t = op_tag(group, version)
        yield Operation(f"{prefix(group, version)}/", "get", f"get{t}APIResources", swagger_tag(group, version),
                        f"{t}Api", "get_api_resources")
        if group:
            yield Operation(f"/apis/{group}/", "get", f"get{camel(group)}APIGroup", swagger_tag(group),
                            f"{camel(group)}Api", "get_api_group")


RESPONSE_CODES = {
    "post": ("200", "201", "202"), "put": ("200", "201"), "patch": ("200", "201"), "delete": ("200", "202"),
}
RESPONSE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted", "401": "Unauthorized"}
WATCH_DESCRIPTIONS = {
    "watch": "watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation "
             "instead, filtered to a single item with the 'fieldSelector' parameter.",
    "watchlist": "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list "
                 "operation instead.",
}


class Operations:
    """Turns :class:`Operation` rows into swagger operation objects, reading the Python client's API classes."""

    def __init__(self, definitions: Definitions) -> None:
        self.definitions = definitions
        self.client = kc.ApiClient()

    def build(self, op: Operation) -> Schema:
        method = getattr(getattr(kc, op.api), op.documented_by)
        signature = inspect.signature(method)
        out: Schema = {
            "consumes": list(op.consumes),
            "description": self.description(op, method),
            "operationId": op.operation_id,
            "parameters": sorted(self.path_parameters(op) + self.query_parameters(op, signature)
                                 + self.body_parameter(op, signature), key=lambda p: p["name"]),
            "produces": list(op.produces),
            "responses": self.responses(op, signature),
            "tags": [op.tag],
        }
        if op.action:
            out["x-kubernetes-action"] = op.action
        if op.gvk:
            out["x-kubernetes-group-version-kind"] = op.gvk.to_dict()
        return out

    @staticmethod
    def description(op: Operation, method: Any) -> str:
        if op.python is None:
            assert op.gvk and op.action
            return WATCH_DESCRIPTIONS[op.action].format(kind=op.gvk.kind)
        return inspect.cleandoc(method.__doc__ or "").split("\n\n")[1].strip()

    @staticmethod
    def path_parameters(op: Operation) -> list[Schema]:
        """``name`` is "name of the <kind of the body>" and ``namespace`` the scope, as kube-apiserver words them."""
        out = []
        for name in re.findall(r"\{(\w+)\}", op.path):
            text = ("object name and auth scope, such as for teams and projects" if name == "namespace"
                    else "path to the resource" if name == "path"
                    else f"name of the {op.gvk.kind if op.gvk else 'object'}")
            out.append({"description": text, "in": "path", "name": name, "required": True, "type": "string",
                        "uniqueItems": True})
        return out

    def query_parameters(self, op: Operation, signature: inspect.Signature) -> list[Schema]:
        wire = self.wire_names(op, signature)
        out = []
        for name, param in signature.parameters.items():
            if name not in wire or wire[name] in UNSERVED_PARAMETERS:
                continue
            out.append({"description": _description(param), "in": "query", "name": wire[name],
                        "type": _query_type(param.annotation), "uniqueItems": True})
        return out

    def wire_names(self, op: Operation, signature: inspect.Signature) -> dict[str, str]:
        """Python argument → query parameter name, by asking the client to serialize a request.

        Every argument gets a unique placeholder; the URL tells under which wire name each one went out. The
        method and path must be the ones this generator wrote, or the table and the client disagree.
        """
        api = getattr(kc, op.api)(self.client)
        args: dict[str, Any] = {"_request_auth": None, "_content_type": None, "_headers": None, "_host_index": 0}
        for name, param in signature.parameters.items():
            if name == "self" or name.startswith("_") and name != "_continue" or name == "async_req":
                continue
            placeholder = f"__{name}__"
            args[name] = [placeholder] if _is_list(param.annotation) else placeholder
        if "body" in args:
            args["body"] = None
        method, url, *_ = getattr(api, f"_{op.documented_by}_serialize")(**args)
        parts = urlsplit(url)
        if op.python is not None:
            expected = re.sub(r"\{(\w+)\}", r"__\1__", op.path)
            assert (method.lower(), parts.path) == (op.method, expected), (op, method, parts.path)
        by_value = {value: key for key, value in parse_qsl(parts.query)}
        return {name: by_value[f"__{name}__"] for name in args if f"__{name}__" in by_value}

    def body_parameter(self, op: Operation, signature: inspect.Signature) -> list[Schema]:
        param = signature.parameters.get("body")
        if param is None or op.python is None:
            return []
        model = _model_of(param.annotation)
        schema = self.definitions.ref(model) if model else {"$ref": f"#/definitions/{PATCH}"}
        return [{"in": "body", "name": "body", "required": param.default is inspect.Parameter.empty,
                 "schema": schema}]

    def responses(self, op: Operation, signature: inspect.Signature) -> Schema:
        if op.python is None:
            schema = self.definitions.ref("V1WatchEvent")
        elif signature.return_annotation is str:
            schema = {"type": "string"}
        else:
            # Deletes whose answer is either the object or a Status are typed ``object``: Status is what kube says.
            schema = self.definitions.ref(_model_of(signature.return_annotation) or "V1Status")
        out: Schema = {}
        for code in RESPONSE_CODES.get(op.action or "", ("200",)):
            out[code] = {"description": RESPONSE_TEXT[code], "schema": schema}
        out["401"] = {"description": RESPONSE_TEXT["401"]}
        return out


def _description(param: inspect.Parameter) -> str:
    """The client documents each argument in the pydantic ``FieldInfo`` of its ``Annotated`` type."""
    for meta in getattr(param.annotation, "__metadata__", ()):
        if isinstance(getattr(meta, "description", None), str):
            return str(meta.description)
    return ""


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``Optional`` down to the value type."""
    while True:
        if hasattr(annotation, "__metadata__"):
            annotation = typing.get_args(annotation)[0]
            continue
        args = [a for a in _union_args(annotation) if a is not type(None)]
        if len(args) == 1 and args[0] is not annotation:
            annotation = args[0]
            continue
        return annotation


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(_unwrap(annotation)) is list


def _query_type(annotation: Any) -> str:
    """kube-apiserver types query parameters by their Go type; ``[]string`` is spelled ``string`` too."""
    value = _unwrap(annotation)
    return {bool: "boolean", int: "integer"}.get(value, "string")


def _model_of(annotation: Any) -> str | None:
    value = _unwrap(annotation)
    if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
        return value.__name__
    return None


def hoist_common_parameters(path_item: dict[str, Schema]) -> dict[str, Any]:
    """Parameters every operation of a path shares move to the path (what kube-openapi does); bodies stay."""
    ops = list(path_item.values())
    common = [p for p in ops[0]["parameters"] if p["in"] != "body" and all(p in o["parameters"] for o in ops)]
    out: dict[str, Any] = {}
    for method, op in path_item.items():
        op["parameters"] = [p for p in op["parameters"] if p not in common]
        if not op["parameters"]:
            del op["parameters"]
        out[method] = op
    if common:
        out["parameters"] = common
    return out


# --- metrics.k8s.io: no client models, so written out (as metrics-server's OpenAPI has them) ------------------------

METRICS = "io.k8s.metrics.pkg.apis.metrics.v1beta1"
METRICS_GV = ("metrics.k8s.io", "v1beta1")
DURATION = f"{META}.Duration"
_TYPE_META = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object. Servers should "
                  "convert recognized schemas to the latest internal value, and may reject unrecognized values. More "
                  "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "Kind is a string value representing the REST resource this object represents. Servers may infer this "
            "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
}
_USAGE = {"additionalProperties": {"$ref": f"#/definitions/{QUANTITY}"}, "type": "object",
          "description": "The memory usage is the memory working set."}


def _metrics_kind(kind: str, description: str, fields: dict[str, Schema], required: list[str]) -> Schema:
    properties: dict[str, Schema] = {k: {"description": v, "type": "string"} for k, v in _TYPE_META.items()}
    properties["metadata"] = {"$ref": f"#/definitions/{META}.ObjectMeta", "description": "Standard object's "
                              "metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                              "api-conventions.md#metadata"}
    properties.update(fields)
    return {"description": description, "properties": properties, "required": required, "type": "object",
            "x-kubernetes-group-version-kind": [{"group": METRICS_GV[0], "kind": kind, "version": METRICS_GV[1]}]}


def _metrics_list(kind: str, description: str) -> Schema:
    properties: dict[str, Schema] = {k: {"description": v, "type": "string"} for k, v in _TYPE_META.items()}
    properties["items"] = {"description": f"List of {kind[:-7].lower()} metrics.", "type": "array",
                           "items": {"$ref": f"#/definitions/{METRICS}.{kind[:-4]}"}}
    properties["metadata"] = {"$ref": f"#/definitions/{META}.ListMeta", "description": "Standard list metadata. More "
                              "info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                              "api-conventions.md#types-kinds"}
    return {"description": description, "properties": properties, "required": ["items"], "type": "object",
            "x-kubernetes-group-version-kind": [{"group": METRICS_GV[0], "kind": kind, "version": METRICS_GV[1]}]}


_WINDOW = {"timestamp": {"$ref": f"#/definitions/{TIME}", "description": "The following fields define time "
                         "interval from which metrics were collected from the interval [Timestamp-Window, "
                         "Timestamp]."},
           "window": {"$ref": f"#/definitions/{DURATION}"}}
METRICS_DEFINITIONS: dict[str, Schema] = {
    DURATION: {"description": "Duration is a wrapper around time.Duration which supports correct marshaling to YAML "
                              "and JSON. In particular, it marshals into strings, which can be used as map keys in "
                              "json.", "type": "string"},
    f"{METRICS}.ContainerMetrics": {
        "description": "ContainerMetrics sets resource usage metrics of a container.", "type": "object",
        "properties": {"name": {"description": "Container name corresponding to the one from pod.spec.containers.",
                                "type": "string"}, "usage": _USAGE},
        "required": ["name", "usage"]},
    f"{METRICS}.NodeMetrics": _metrics_kind("NodeMetrics", "NodeMetrics sets resource usage metrics of a node.",
                                            {**_WINDOW, "usage": _USAGE}, ["timestamp", "window", "usage"]),
    f"{METRICS}.NodeMetricsList": _metrics_list("NodeMetricsList", "NodeMetricsList is a list of NodeMetrics."),
    f"{METRICS}.PodMetrics": _metrics_kind(
        "PodMetrics", "PodMetrics sets resource usage metrics of a pod.",
        {**_WINDOW, "containers": {"description": "Metrics for all containers are collected within the same time "
                                                  "window.", "type": "array", "x-kubernetes-list-type": "atomic",
                                   "items": {"$ref": f"#/definitions/{METRICS}.ContainerMetrics"}}},
        ["timestamp", "window", "containers"]),
    f"{METRICS}.PodMetricsList": _metrics_list("PodMetricsList", "PodMetricsList is a list of PodMetrics."),
}
# Parameters of a list this group does not serve (it has no watch).
METRICS_UNSERVED = frozenset({"watch", "allowWatchBookmarks", "sendInitialEvents", "resourceVersionMatch"})


def metrics_operations(operations: Operations) -> Iterator[tuple[str, str, Schema]]:
    """``get``/``list`` of NodeMetrics and PodMetrics, built from the core nodes/pods operations of the same shape
    (same query parameters) with the metrics group's paths, ids, kinds and bodies."""
    group, version = METRICS_GV
    t, tag = op_tag(group, version), swagger_tag(group, version)
    for core, kind in (("Node", "NodeMetrics"), ("Pod", "PodMetrics")):
        template = Resource("", "v1", core, f"{core.lower()}s", core == "Pod", ("get", "list"))
        for op in resource_operations(template):
            built = operations.build(op)
            path = op.path.replace("/api/v1/", f"/apis/{group}/{version}/", 1)
            list_op = op.action == "list"
            built["operationId"] = op.operation_id.replace("CoreV1", t, 1).replace(core, kind, 1)
            built["description"] = f"list objects of kind {kind}" if list_op else f"read the specified {kind}"
            built["produces"], built["tags"] = list(PRODUCES), [tag]
            built["x-kubernetes-group-version-kind"] = {"group": group, "kind": kind, "version": version}
            built["responses"]["200"]["schema"] = {"$ref": f"#/definitions/{METRICS}.{kind}{'List' if list_op else ''}"}
            built["parameters"] = [
                {**p, "description": f"name of the {kind}"} if p["name"] == "name" and p["in"] == "path" else p
                for p in built["parameters"] if p["name"] not in METRICS_UNSERVED]
            yield path, op.method, built
    for path, op_id, schema in ((f"/apis/{group}/{version}/", f"get{t}APIResources", "APIResourceList"),
                                (f"/apis/{group}/", f"get{camel(group)}APIGroup", "APIGroup")):
        yield path, "get", {
            "consumes": list(PRODUCES), "description": "get available resources" if schema == "APIResourceList"
            else "get information of a group", "operationId": op_id, "parameters": [], "produces": list(PRODUCES),
            "responses": {"200": {"description": "OK", "schema": {"$ref": f"#/definitions/{META}.{schema}"}},
                          "401": {"description": "Unauthorized"}},
            "tags": [tag if schema == "APIResourceList" else swagger_tag(group)]}


# --- the document ------------------------------------------------------------------------------------------------

def served_gvks() -> dict[str, list[GVK]]:
    """Python model → the GVKs it is served as (``x-kubernetes-group-version-kind`` of its definition)."""
    gvks: dict[str, list[GVK]] = {}
    for r in RESOURCES:
        gvks[r.model_name] = [r.gvk]
        if "list" in r.verbs:
            gvks[f"{r.model_name}List"] = [GVK(r.group, r.version, f"{r.kind}List")]
    for kind, model in SUBRESOURCE_MODELS.items():
        gvk = next(s.gvk for s in SUBRESOURCES.values() if s.gvk and s.gvk.kind == kind)
        gvks[model] = [gvk]
    for kind in ("APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "Status"):
        gvks[f"V1{kind}"] = [GVK("", "v1", kind)]
    for kind in ("DeleteOptions", "WatchEvent"):
        gvks[f"V1{kind}"] = [GVK(g, v, kind) for g, v in GROUP_VERSIONS]
    return gvks


def root_models() -> list[tuple[str, str]]:
    """Served kinds with their Go package, core first (see :class:`Definitions`)."""
    gvks = served_gvks()
    order = {gv: i for i, gv in enumerate(GROUP_VERSIONS)}
    roots = [(m, g[0]) for m, g in gvks.items() if m not in META_MODELS]
    roots.sort(key=lambda mg: (order[(mg[1].group, mg[1].version)], mg[0]))
    return ([(m, META) for m in sorted(META_MODELS & gvks.keys())]
            + [(m, group_package(g.group, g.version)) for m, g in roots] + [("VersionInfo", VERSION_PACKAGE)])


def check_tables() -> None:
    """Every (model, field) the tables name must exist in the client, or a client upgrade went unnoticed."""
    for table in (LEAF_TYPES, PATCH_STRATEGIES):
        for model, json_name in table:
            if json_name not in model_class(model).attribute_map.values():
                raise ValueError(f"{model} has no field {json_name!r}; update the table")


def build() -> Schema:
    check_tables()
    definitions = Definitions(root_models(), served_gvks())
    operations = Operations(definitions)
    paths: dict[str, dict[str, Schema]] = {}
    for op in [*discovery_operations(), *(o for r in RESOURCES for o in resource_operations(r))]:
        built = operations.build(op)
        if op.action is None:  # discovery: kube-apiserver speaks every encoding here
            built["consumes"] = built["produces"] = list(PRODUCES)
        paths.setdefault(op.path, {})[op.method] = built
    for path, method, built in metrics_operations(operations):
        paths.setdefault(path, {})[method] = built
    return {
        "definitions": {**definitions.all(), **METRICS_DEFINITIONS},
        "info": INFO,
        "paths": {path: hoist_common_parameters(item) for path, item in paths.items()},
        "security": [{"BearerToken": []}],
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "in": "header",
                                                "name": "authorization", "type": "apiKey"}},
        "swagger": "2.0",
    }


def render(document: Schema) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def import_kube_definitions(definitions_file: Path) -> None:
    """Rewrite ``KUBE_REF_DESCRIPTIONS``' and ``KUBE_INT_FORMATS``' files from a Kubernetes OpenAPI/JSON-schema
    definitions document."""
    document = json.loads(definitions_file.read_text())
    definitions = document.get("definitions") or document.get("$defs") or {}
    fields = [(f"{name}.{field}", prop) for name, definition in definitions.items()
              for field, prop in (definition.get("properties") or {}).items()]
    descriptions = {key: prop["description"] for key, prop in fields
                    if prop.get("description") and _references_a_type(prop)}
    formats = {key: scalar["format"] for key, prop in fields
               if (scalar := prop.get("items") if _is(prop, "array") else prop)
               and _is(scalar, "integer") and scalar.get("format") in ("int32", "int64")}
    for path, table in ((REF_DESCRIPTIONS_FILE, descriptions), (INT_FORMATS_FILE, formats)):
        path.write_text(json.dumps(table, indent=0, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"wrote {path} ({len(table)} fields)")


def _is(prop: Schema, json_type: str) -> bool:
    """JSON schema's ``type`` is a name or, for a nullable field, a list of names."""
    kind = prop.get("type")
    return kind == json_type or (isinstance(kind, list) and json_type in kind)


def _references_a_type(prop: Schema) -> bool:
    return any("$ref" in p for p in (prop, prop.get("items") or {}, prop.get("additionalProperties") or {})) \
        or "allOf" in prop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed swagger.json is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--import-kube-definitions", type=Path, metavar="DEFINITIONS_JSON",
                        help="rewrite tools/openapi_ref_descriptions.json and openapi_int_formats.json from kube's "
                             "definitions, then exit")
    args = parser.parse_args(argv)
    if args.import_kube_definitions:
        import_kube_definitions(args.import_kube_definitions)
        return 0
    text = render(build())
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            print(f"{args.output} is stale: run tools/gen_openapi.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
