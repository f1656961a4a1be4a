"""A protobuf body → the JSON-shaped dict the JSON decoder would have produced for the same object (``decode``:
``kind`` and ``apiVersion`` from the envelope, the fields by the rules below), so everything after decoding is
shared with JSON bodies.

The proto field names in ``generated.proto`` already are the JSON names, so the walk is generic; what is not generic
lives in three tables:

* ``SPECIAL_TYPES``: messages that have a JSON form of their own (``metav1.Time`` is a string, ``Quantity`` is a
  string, ``IntOrString`` is a number or a string, ``RawExtension``/``FieldsV1`` carry embedded JSON …);
* ``INLINE``: Go structs embedded with ``json:",inline"`` (``Volume.volumeSource``, ``Probe.handler`` …), which
  are a field in protobuf but whose fields sit on the parent in JSON;
* ``KEEP_ZERO``: scalar fields whose zero value must survive.

Why ``KEEP_ZERO`` is needed: Go's generated marshallers write every *value* field, set or not (``generateName: ""``,
``paused: false``, ``minReadySeconds: 0`` are all on the wire), and only *pointer* fields are absent when unset. So
proto2 presence does not tell "unset" from "zero"; the Go struct tags do. A JSON body from the same client would carry
``omitempty`` fields only when non-zero, and the Go apiserver cannot tell a zero value field from an absent one either,
so zero scalars are dropped — except the pointer fields listed here, where ``0``/``false``/``""`` was set on purpose
(``replicas: 0``, ``gracePeriodSeconds: 0``, ``automountServiceAccountToken: false``, ``runAsUser: 0`` …).
Map entries and list items are data and are always kept; messages are always kept (Go's JSON never omits a struct).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from apimachinery import errors

from .envelope import MAGIC, unwrap

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_CORE = "k8s.io.api.core.v1"
_APPS = "k8s.io.api.apps.v1"
_DISCOVERY = "k8s.io.api.discovery.v1"
_BATCH = "k8s.io.api.batch.v1"
_AUTOSCALING = "k8s.io.api.autoscaling.v1"
_AUTOSCALING_V2 = "k8s.io.api.autoscaling.v2"
_CERTIFICATES = "k8s.io.api.certificates.v1"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- special types ------------------------------------------------------------------------------------------------
def _time(msg: Any) -> str | None:
    """``metav1.Time``: RFC 3339 in UTC, whole seconds (Go drops the nanos on decode); an empty message is the zero
    time, which Go writes as JSON ``null``."""
    if not (msg.HasField("seconds") or msg.HasField("nanos")):
        return None
    t = _from_unix(msg.seconds)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"


def _micro_time(msg: Any) -> str | None:
    """``metav1.MicroTime``: RFC 3339 in UTC with exactly six fraction digits (truncated, as Go's Format does)."""
    if not (msg.HasField("seconds") or msg.HasField("nanos")):
        return None
    t = _from_unix(msg.seconds)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
            f"{msg.nanos // 1000:06d}Z")


def _from_unix(seconds: int) -> datetime:
    try:
        return _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        raise errors.BadRequest(f"the body of the request could not be decoded: time {seconds}s is out of range") \
            from None


def _quantity(msg: Any) -> str:
    """``resource.Quantity`` travels as its canonical string; a missing string is the zero quantity, ``"0"``."""
    return str(msg.string) if msg.HasField("string") else "0"


def _int_or_string(msg: Any) -> int | str:
    """``intstr.IntOrString``: ``type`` 1 is a string, anything else the int."""
    return str(msg.strVal) if msg.type == 1 else int(msg.intVal)


def _raw_extension(msg: Any) -> Any:
    """``runtime.RawExtension``: the embedded object, itself JSON or a nested protobuf object."""
    return _embedded(msg.raw, "RawExtension")


def _fields_v1(msg: Any) -> Any:
    """``metav1.FieldsV1``: managed-fields JSON carried as bytes."""
    return _embedded(msg.Raw, "FieldsV1")


def _embedded(raw: bytes, what: str) -> Any:
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return decode(raw)  # a nested protobuf object: same envelope, same rules
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise errors.BadRequest(f"the body of the request could not be decoded: {what} does not hold JSON: {err}") \
            from None


def _duration(msg: Any) -> str:
    """``metav1.Duration``: nanoseconds, written in JSON the way Go's ``time.Duration.String`` writes them."""
    return go_duration(int(msg.duration))


def _verbs(msg: Any) -> list[str]:
    return list(msg.items)


SPECIAL_TYPES: Mapping[str, Callable[[Any], Any]] = {
    f"{_META}.Time": _time,
    f"{_META}.Timestamp": _time,
    f"{_META}.MicroTime": _micro_time,
    f"{_META}.Duration": _duration,
    f"{_META}.FieldsV1": _fields_v1,
    f"{_META}.Verbs": _verbs,
    f"{_CERTIFICATES}.ExtraValue": _verbs,  # a []string in Go and JSON, wrapped only for protobuf
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_extension,
}

# --- inline (embedded) structs ------------------------------------------------------------------------------------
INLINE: frozenset[tuple[str, str]] = frozenset({
    (f"{_CORE}.Volume", "volumeSource"),
    (f"{_CORE}.Probe", "handler"),
    (f"{_CORE}.EphemeralContainer", "ephemeralContainerCommon"),
    (f"{_CORE}.PersistentVolumeSpec", "persistentVolumeSource"),
    (f"{_CORE}.ConfigMapEnvSource", "localObjectReference"),
    (f"{_CORE}.ConfigMapKeySelector", "localObjectReference"),
    (f"{_CORE}.ConfigMapProjection", "localObjectReference"),
    (f"{_CORE}.ConfigMapVolumeSource", "localObjectReference"),
    (f"{_CORE}.SecretEnvSource", "localObjectReference"),
    (f"{_CORE}.SecretKeySelector", "localObjectReference"),
    (f"{_CORE}.SecretProjection", "localObjectReference"),
    ("k8s.io.api.networking.v1.IngressRule", "ingressRuleValue"),
})


# --- Go pointer scalars: a zero value was set on purpose ----------------------------------------------------------
def _fields(message: str, *names: str) -> set[tuple[str, str]]:
    return {(message, name) for name in names}


KEEP_ZERO: frozenset[tuple[str, str]] = frozenset(
    _fields(f"{_META}.ObjectMeta", "deletionGracePeriodSeconds")
    | _fields(f"{_META}.OwnerReference", "controller", "blockOwnerDeletion")
    | _fields(f"{_META}.ListMeta", "remainingItemCount")
    | _fields(f"{_META}.DeleteOptions", "gracePeriodSeconds", "orphanDependents", "propagationPolicy",
              "ignoreStoreReadErrorWithClusterBreakingPotential")
    | _fields(f"{_META}.Preconditions", "uid", "resourceVersion")
    | _fields(f"{_META}.ListOptions", "sendInitialEvents")
    # core/v1: pods and what they embed
    | _fields(f"{_CORE}.PodSpec", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
              "automountServiceAccountToken", "shareProcessNamespace", "priority", "runtimeClassName",
              "enableServiceLinks", "preemptionPolicy", "setHostnameAsFQDN", "hostUsers")
    | _fields(f"{_CORE}.PodSecurityContext", "runAsUser", "runAsGroup", "runAsNonRoot", "supplementalGroupsPolicy",
              "fsGroup", "fsGroupChangePolicy", "seLinuxChangePolicy")
    | _fields(f"{_CORE}.SecurityContext", "privileged", "runAsUser", "runAsGroup", "runAsNonRoot",
              "readOnlyRootFilesystem", "allowPrivilegeEscalation", "procMount")
    | _fields(f"{_CORE}.WindowsSecurityContextOptions", "gmsaCredentialSpecName", "gmsaCredentialSpec",
              "runAsUserName", "hostProcess")
    | _fields(f"{_CORE}.SeccompProfile", "localhostProfile")
    | _fields(f"{_CORE}.AppArmorProfile", "localhostProfile")
    | _fields(f"{_CORE}.Container", "restartPolicy")
    | _fields(f"{_CORE}.EphemeralContainerCommon", "restartPolicy")
    | _fields(f"{_CORE}.ContainerStatus", "started")
    | _fields(f"{_CORE}.Probe", "terminationGracePeriodSeconds")
    | _fields(f"{_CORE}.GRPCAction", "service")
    | _fields(f"{_CORE}.VolumeMount", "recursiveReadOnly", "mountPropagation")
    | _fields(f"{_CORE}.VolumeMountStatus", "recursiveReadOnly")
    | _fields(f"{_CORE}.Toleration", "tolerationSeconds")
    | _fields(f"{_CORE}.TopologySpreadConstraint", "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy")
    | _fields(f"{_CORE}.PodDNSConfigOption", "value")
    | _fields(f"{_CORE}.PodResourceClaim", "resourceClaimName", "resourceClaimTemplateName")
    | _fields(f"{_CORE}.PodResourceClaimStatus", "resourceClaimName")
    | _fields(f"{_CORE}.ConfigMapEnvSource", "optional")
    | _fields(f"{_CORE}.ConfigMapKeySelector", "optional")
    | _fields(f"{_CORE}.ConfigMapProjection", "optional")
    | _fields(f"{_CORE}.ConfigMapVolumeSource", "defaultMode", "optional")
    | _fields(f"{_CORE}.SecretEnvSource", "optional")
    | _fields(f"{_CORE}.SecretKeySelector", "optional")
    | _fields(f"{_CORE}.SecretProjection", "optional")
    | _fields(f"{_CORE}.SecretVolumeSource", "defaultMode", "optional")
    | _fields(f"{_CORE}.KeyToPath", "mode")
    | _fields(f"{_CORE}.DownwardAPIVolumeFile", "mode")
    | _fields(f"{_CORE}.DownwardAPIVolumeSource", "defaultMode")
    | _fields(f"{_CORE}.ProjectedVolumeSource", "defaultMode")
    | _fields(f"{_CORE}.ServiceAccountTokenProjection", "expirationSeconds")
    | _fields(f"{_CORE}.ClusterTrustBundleProjection", "name", "signerName", "optional")
    | _fields(f"{_CORE}.HostPathVolumeSource", "type")
    | _fields(f"{_CORE}.CSIVolumeSource", "readOnly", "fsType")
    | _fields(f"{_CORE}.AzureDiskVolumeSource", "cachingMode", "fsType", "readOnly", "kind")
    | _fields(f"{_CORE}.FCVolumeSource", "lun")
    | _fields(f"{_CORE}.ISCSIVolumeSource", "initiatorName")
    | _fields(f"{_CORE}.ISCSIPersistentVolumeSource", "initiatorName")
    | _fields(f"{_CORE}.PersistentVolumeClaimSpec", "storageClassName", "volumeMode", "volumeAttributesClassName")
    | _fields(f"{_CORE}.PersistentVolumeClaimStatus", "currentVolumeAttributesClassName")
    | _fields(f"{_CORE}.PersistentVolumeSpec", "volumeMode", "volumeAttributesClassName")
    | _fields(f"{_CORE}.TypedLocalObjectReference", "apiGroup")
    | _fields(f"{_CORE}.TypedObjectReference", "apiGroup", "namespace")
    | _fields(f"{_CORE}.EndpointAddress", "nodeName")
    # discovery/v1: EndpointSlices (``ready: false`` and ``name: ""`` are meant)
    | _fields(f"{_DISCOVERY}.Endpoint", "hostname", "nodeName", "zone")
    | _fields(f"{_DISCOVERY}.EndpointConditions", "ready", "serving", "terminating")
    | _fields(f"{_DISCOVERY}.EndpointPort", "name", "protocol", "port", "appProtocol")
    # autoscaling/v1 and v2: HorizontalPodAutoscalers (``minReplicas: 0`` is refused, not defaulted)
    | _fields(f"{_AUTOSCALING}.HorizontalPodAutoscalerSpec", "minReplicas", "targetCPUUtilizationPercentage")
    | _fields(f"{_AUTOSCALING}.HorizontalPodAutoscalerStatus", "observedGeneration", "currentCPUUtilizationPercentage")
    | _fields(f"{_CERTIFICATES}.CertificateSigningRequestSpec", "expirationSeconds")
    | _fields(f"{_AUTOSCALING_V2}.HorizontalPodAutoscalerSpec", "minReplicas")
    | _fields(f"{_AUTOSCALING_V2}.HorizontalPodAutoscalerStatus", "observedGeneration")
    | _fields(f"{_AUTOSCALING_V2}.HPAScalingRules", "stabilizationWindowSeconds", "selectPolicy")
    | _fields(f"{_AUTOSCALING_V2}.MetricTarget", "averageUtilization")
    | _fields(f"{_AUTOSCALING_V2}.MetricValueStatus", "averageUtilization")
    # core/v1: other kinds
    | _fields(f"{_CORE}.ReplicationControllerSpec", "replicas")
    | _fields(f"{_CORE}.ConfigMap", "immutable")
    | _fields(f"{_CORE}.Secret", "immutable")
    | _fields(f"{_CORE}.ServiceAccount", "automountServiceAccountToken")
    | _fields(f"{_CORE}.ServiceSpec", "ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass",
              "internalTrafficPolicy", "trafficDistribution")
    | _fields(f"{_CORE}.ServicePort", "appProtocol")
    | _fields(f"{_CORE}.EndpointPort", "appProtocol")
    | _fields(f"{_CORE}.ClientIPConfig", "timeoutSeconds")
    | _fields(f"{_CORE}.LoadBalancerIngress", "ipMode")
    | _fields(f"{_CORE}.PortStatus", "error")
    | _fields(f"{_CORE}.NodeFeatures", "supplementalGroupsPolicy")
    | _fields(f"{_CORE}.NodeRuntimeHandlerFeatures", "recursiveReadOnlyMounts", "userNamespaces")
    | _fields(f"{_CORE}.PodLogOptions", "sinceSeconds", "tailLines", "limitBytes", "stream")
    # apps/v1
    | _fields(f"{_APPS}.DeploymentSpec", "replicas", "revisionHistoryLimit", "progressDeadlineSeconds")
    | _fields(f"{_APPS}.DeploymentStatus", "collisionCount")
    | _fields(f"{_APPS}.ReplicaSetSpec", "replicas")
    | _fields(f"{_APPS}.DaemonSetSpec", "revisionHistoryLimit")
    | _fields(f"{_APPS}.DaemonSetStatus", "collisionCount")
    | _fields(f"{_APPS}.StatefulSetSpec", "replicas", "revisionHistoryLimit")
    | _fields(f"{_APPS}.StatefulSetStatus", "collisionCount")
    | _fields(f"{_APPS}.RollingUpdateStatefulSetStrategy", "partition")
    # batch/v1
    | _fields(f"{_BATCH}.JobSpec", "parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
              "backoffLimitPerIndex", "maxFailedIndexes", "manualSelector", "ttlSecondsAfterFinished",
              "completionMode", "suspend", "podReplacementPolicy", "managedBy")
    | _fields(f"{_BATCH}.JobStatus", "terminating", "failedIndexes", "ready")
    | _fields(f"{_BATCH}.PodFailurePolicyOnExitCodesRequirement", "containerName")
    | _fields(f"{_BATCH}.SuccessPolicyRule", "succeededIndexes", "succeededCount")
    | _fields(f"{_BATCH}.CronJobSpec", "timeZone", "startingDeadlineSeconds", "suspend", "successfulJobsHistoryLimit",
              "failedJobsHistoryLimit")
    # coordination/v1, policy/v1, autoscaling/v1
    | _fields("k8s.io.api.coordination.v1.LeaseSpec", "holderIdentity", "leaseDurationSeconds", "leaseTransitions",
              "strategy", "preferredHolder")
    | _fields("k8s.io.api.policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy")
    | _fields("k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec", "minReplicas",
              "targetCPUUtilizationPercentage")
    | _fields("k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus", "observedGeneration",
              "currentCPUUtilizationPercentage")
    # A value field, kept because the scale handler reads a missing spec.replicas as an error, not as 0.
    | _fields("k8s.io.api.autoscaling.v1.ScaleSpec", "replicas")
)


# --- the walk -----------------------------------------------------------------------------------------------------
def decode(body: bytes) -> dict[str, Any]:
    """The JSON-shaped object in a protobuf body (``envelope.unwrap``'s 400s for a bad one)."""
    api_version, kind, message = unwrap(body)
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        obj.update(to_json(message))
    except (UnicodeDecodeError, ValueError) as err:  # e.g. a string field that is not UTF-8
        raise errors.BadRequest(f"the body of the request could not be decoded: {kind}: {err}") from None
    return obj


def to_json(message: Message) -> dict[str, Any]:
    """The JSON form of an object message: its set fields under their JSON names, by the rules above."""
    out: dict[str, Any] = {}
    _fill(out, message)
    return out


def _fill(out: dict[str, Any], message: Message) -> None:
    desc = message.DESCRIPTOR
    for field, value in message.ListFields():
        if (desc.full_name, field.name) in INLINE:
            _fill(out, value)
        elif _is_map(field):
            out[field.name] = {_text(key): _value(_map_value_field(field), item) for key, item in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value(field, item) for item in value]
        elif field.type != FieldDescriptor.TYPE_MESSAGE and _is_zero(value) \
                and (desc.full_name, field.name) not in KEEP_ZERO:
            continue
        else:
            out[field.name] = _value(field, value)


def _value(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        special = SPECIAL_TYPES.get(_message_type(field).full_name)
        return special(value) if special is not None else to_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")  # Go's encoding/json writes []byte as base64
    if field.type == FieldDescriptor.TYPE_STRING:
        return _text(value)
    return value


def _text(value: Any) -> Any:
    """proto2 strings are not UTF-8-checked on parse (upb hands back bytes); refuse them as a JSON body would."""
    if isinstance(value, bytes):
        raise errors.BadRequest("the body of the request could not be decoded: a string field is not valid UTF-8")
    return value


def _is_zero(value: Any) -> bool:
    return value is False or value == 0 or value == "" or value == b""


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _map_value_field(field: FieldDescriptor) -> FieldDescriptor:
    value_field: FieldDescriptor = _message_type(field).fields_by_name["value"]
    return value_field


def _message_type(field: FieldDescriptor) -> Descriptor:
    """A message field's type (set for every TYPE_MESSAGE field, maps' entries included)."""
    message_type = field.message_type
    assert message_type is not None, field.full_name
    return message_type


def go_duration(ns: int) -> str:
    """Go's ``time.Duration.String``: ``"0s"``, ``"1.5µs"``, ``"300ms"``, ``"1h2m3.5s"``."""
    sign, u = ("-", -ns) if ns < 0 else ("", ns)
    if u == 0:
        return "0s"
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_fraction(u, 1_000)}µs"
    if u < 1_000_000_000:
        return f"{sign}{_fraction(u, 1_000_000)}ms"
    seconds, rest = divmod(u, 1_000_000_000)
    text = f"{_fraction((seconds % 60) * 1_000_000_000 + rest, 1_000_000_000)}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if not rest:
        return str(whole)
    return f"{whole}.{str(rest).zfill(len(str(unit)) - 1).rstrip('0')}"
