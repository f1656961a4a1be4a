"""PodSpec and PodTemplateSpec rules, written once for pods, ReplicationControllers, ReplicaSets and Deployments.

Defaulting mirrors ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_PodSpec``, ``SetDefaults_Container``, probes,
volumes); validation mirrors ``ValidatePodSpec`` / ``ValidatePodTemplateSpec`` in
``pkg/apis/core/validation/validation.go``, in the same order so multi-error messages read the same. Pod-only
rules (``SetDefaults_Pod``, admission) live in ``pods``; scheduling constraints in ``podscheduling``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    duplicate,
    forbidden,
    go_string_map,
    inclusive_range_error,
    invalid,
    is_config_map_key,
    is_env_var_name,
    is_valid_ip,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    required,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
    validate_nonnegative,
    validate_qualified_name,
)
from apiserver.registry.podscheduling import (
    validate_affinity,
    validate_tolerations,
    validate_topology_spread_constraints,
)
from apiserver.registry.qos import validate_resource_requirements
from apiserver.registry.volumefiles import (
    validate_local_descending_path,
    validate_no_backsteps,
    validate_projecting_source,
)

Object = dict[str, Any]

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_FILE_MODE = 0o644
MAX_INT32 = 2**31 - 1
CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc",
    "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk",
    "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
# The Container fields an ephemeral container may not set (not in kube's ``allowedEphemeralContainerFields``), in
# the Container struct's order, as the errors come.
EPHEMERAL_FORBIDDEN_FIELDS = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe",
                              "readinessProbe", "startupProbe", "lifecycle")
_ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
_ENV_RESOURCE_FIELDS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                        "requests.ephemeral-storage", "requests.memory")


# === defaulting ============================================================================================


def image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or an untagged, undigested image; ``IfNotPresent`` otherwise."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_template(template: Object) -> None:
    """Defaults of a ``PodTemplateSpec`` (the zero ``creationTimestamp`` serialises as ``null`` in v1.32)."""
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("creationTimestamp", None)
    default_pod_spec(template.setdefault("spec", {}))


def default_pod_spec(spec: Object) -> None:
    """``SetDefaults_PodSpec`` and the defaults of everything nested in it."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    # v1's deprecated ``serviceAccount`` mirrors ``serviceAccountName`` (conversion, both directions).
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for kind in CONTAINER_KINDS:
        for container in spec.get(kind) or []:
            default_container(container)
    for volume in spec.get("volumes") or []:
        default_volume(volume)


def default_container(container: Object) -> None:
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(container.get("image") or "")
    container.setdefault("terminationMessagePath", TERMINATION_MESSAGE_PATH)
    container.setdefault("terminationMessagePolicy", "File")
    if container.get("resources") is None:
        container["resources"] = {}
    for port in container.get("ports") or []:
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if field_ref is not None and not field_ref.get("apiVersion"):
            field_ref["apiVersion"] = "v1"
    for probe_kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        if container.get(probe_kind) is not None:
            _default_probe(container[probe_kind])
    for hook in ("postStart", "preStop"):
        handler = (container.get("lifecycle") or {}).get(hook)
        if handler and handler.get("httpGet") is not None:
            _default_http_get(handler["httpGet"])


def _default_probe(probe: Object) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    if probe.get("httpGet") is not None:
        _default_http_get(probe["httpGet"])


def _default_http_get(action: Object) -> None:
    action.setdefault("path", "/")
    action.setdefault("scheme", "HTTP")


def default_volume(volume: Object) -> None:
    """``SetDefaults_Volume``: no source means ``emptyDir``; file-projecting sources default mode 0644."""
    if not any(volume.get(source) is not None for source in VOLUME_SOURCES):
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if volume.get(source) is not None and volume[source].get("defaultMode") is None:
            volume[source]["defaultMode"] = DEFAULT_FILE_MODE
    if volume.get("hostPath") is not None:
        volume["hostPath"].setdefault("type", "")


# === validation ============================================================================================


def validate_pod_template(template: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec``: template labels/annotations (named ``<path>.labels``) and its PodSpec."""
    template = template or {}
    metadata = template.get("metadata") or {}
    spec = template.get("spec") or {}
    causes = validate_labels(metadata.get("labels"), f"{path}.labels")
    causes.extend(validate_annotations(metadata.get("annotations"), f"{path}.annotations"))
    causes.extend(validate_pod_spec(spec, f"{path}.spec", is_pod=False))
    if spec.get("ephemeralContainers"):
        causes.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return causes


def validate_controller_template(template: Mapping[str, Any] | None, path: str, *, owner: str,
                                 labels_match: bool) -> list[Cause]:
    """A controller's template: it must carry the selected labels and restart its containers forever."""
    if template is None:
        return [required(path)]
    labels = (template.get("metadata") or {}).get("labels")
    causes: list[Cause] = []
    if not labels_match:
        causes.append(invalid(f"{path}.metadata.labels", Raw(go_string_map(labels)),
                              "`selector` does not match template `labels`"))
    causes.extend(validate_pod_template(template, path))
    spec = template.get("spec") or {}
    if (spec.get("restartPolicy") or "") != "Always":
        causes.append(not_supported(f"{path}.spec.restartPolicy", spec.get("restartPolicy") or "", ("Always",)))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and owner == "DaemonSet":  # ValidateDaemonSetSpec words it as its own rule
        causes.append(invalid(f"{path}.spec.activeDeadlineSeconds", deadline,
                              "activeDeadlineSeconds must be nil for daemonset"))
    elif deadline is not None:
        causes.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                                f"activeDeadlineSeconds in {owner} is not Supported"))
    return causes


def validate_pod_spec(spec: Mapping[str, Any], path: str, *, is_pod: bool) -> list[Cause]:
    """``ValidatePodSpec``; ``is_pod`` adds the checks Kubernetes makes only for pods, not for templates."""
    causes: list[Cause] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        causes.append(required(f"{path}.terminationGracePeriodSeconds"))
    volumes, volume_causes = validate_volumes(spec.get("volumes"), f"{path}.volumes")
    causes.extend(volume_causes)
    causes.extend(validate_containers(spec.get("containers"), volumes, grace, f"{path}.containers"))
    causes.extend(validate_init_containers(spec.get("initContainers"), spec.get("containers"), volumes, grace,
                                           f"{path}.initContainers"))
    causes.extend(validate_ephemeral_containers(spec, volumes, f"{path}.ephemeralContainers"))
    causes.extend(_validate_host_network_ports(spec, path, is_pod))
    causes.extend(validate_choice(spec.get("restartPolicy"), RESTART_POLICIES, f"{path}.restartPolicy"))
    causes.extend(validate_choice(spec.get("dnsPolicy"), DNS_POLICIES, f"{path}.dnsPolicy"))
    causes.extend(validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector"))
    for i, secret in enumerate(spec.get("imagePullSecrets") or []):
        if set(secret) - {"name"}:
            causes.append(invalid(f"{path}.imagePullSecrets[{i}]", Raw(str(secret)), "only name may be set"))
    causes.extend(validate_affinity(spec.get("affinity"), f"{path}.affinity"))
    causes.extend(_validate_dns_config(spec, f"{path}.dnsConfig"))
    for i, gate in enumerate(spec.get("readinessGates") or []):
        causes.extend(validate_qualified_name(gate.get("conditionType", ""),
                                              f"{path}.readinessGates[{i}].conditionType"))
    causes.extend(_validate_scheduling_gates(spec.get("schedulingGates"), f"{path}.schedulingGates"))
    causes.extend(validate_topology_spread_constraints(spec.get("topologySpreadConstraints"),
                                                       f"{path}.topologySpreadConstraints"))
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        if spec.get(key):
            causes.extend(invalid(f"{path}.{key}", spec[key], msg) for msg in name_is_dns_subdomain(spec[key], False))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        causes.append(invalid(f"{path}.activeDeadlineSeconds", deadline, inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            causes.extend(validate_dns1123_label(spec[key], f"{path}.{key}"))
    causes.extend(validate_tolerations(spec.get("tolerations"), f"{path}.tolerations"))
    for i, alias in enumerate(spec.get("hostAliases") or []):
        causes.extend(is_valid_ip(f"{path}.hostAliases[{i}].ip", alias.get("ip", "")))
        for j, hostname in enumerate(alias.get("hostnames") or []):
            causes.extend(validate_dns1123_subdomain(hostname, f"{path}.hostAliases[{i}].hostnames[{j}]"))
    if spec.get("preemptionPolicy") is not None:
        causes.extend(validate_choice(spec["preemptionPolicy"], PREEMPTION_POLICIES, f"{path}.preemptionPolicy"))
    if spec.get("overhead"):
        causes.extend(validate_resource_requirements({"limits": spec["overhead"]}, f"{path}.overhead"))
    os_name = (spec.get("os") or {}).get("name")
    if spec.get("os") is not None and os_name not in ("linux", "windows"):
        causes.append(not_supported(f"{path}.os.name", os_name or "", ("linux", "windows")))
    causes.extend(validate_security_context_ids(spec.get("securityContext"), f"{path}.securityContext",
                                                ("fsGroup", "runAsUser", "runAsGroup")))
    if is_pod:
        for kind in CONTAINER_KINDS:
            for i, container in enumerate(spec.get(kind) or []):
                image = container.get("image") or ""
                if image != image.strip():
                    causes.append(invalid(f"{path}.{kind}[{i}].image", image,
                                          "must not have leading or trailing whitespace"))
    return causes


def validate_choice(value: Any, allowed: tuple[str, ...], path: str) -> list[Cause]:
    if not value:
        return [required(path)]
    return [] if value in allowed else [not_supported(path, value, allowed)]


def _validate_host_network_ports(spec: Mapping[str, Any], path: str, is_pod: bool) -> list[Cause]:
    if not spec.get("hostNetwork"):
        return []
    causes = []
    for i, container in enumerate(spec.get("containers") or []):
        for j, port in enumerate(container.get("ports") or []):
            host_port, container_port = port.get("hostPort") or 0, port.get("containerPort") or 0
            if (is_pod or host_port != 0) and host_port != container_port:
                causes.append(invalid(f"{path}.containers[{i}].ports[{j}].hostPort", host_port,
                                      "must match `containerPort` when `hostNetwork` is true"))
    return causes


def _validate_dns_config(spec: Mapping[str, Any], path: str) -> list[Cause]:
    config = spec.get("dnsConfig")
    if spec.get("dnsPolicy") == "None":
        if config is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [required(f"{path}.nameservers",
                             "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if config is None:
        return []
    causes: list[Cause] = []
    nameservers = config.get("nameservers") or []
    if len(nameservers) > 3:
        causes.append(invalid(f"{path}.nameservers", nameservers, "must not have more than 3 nameservers"))
    for i, server in enumerate(nameservers):
        causes.extend(is_valid_ip(f"{path}.nameservers[{i}]", server))
    searches = config.get("searches") or []
    if len(searches) > 32:
        causes.append(invalid(f"{path}.searches", searches, "must not have more than 32 search paths"))
    for i, search in enumerate(searches):
        causes.extend(validate_dns1123_subdomain(search.removesuffix("."), f"{path}.searches[{i}]"))
    for i, option in enumerate(config.get("options") or []):
        if not option.get("name"):
            causes.append(required(f"{path}.options[{i}]", "must not be empty"))
    return causes


def _validate_scheduling_gates(gates: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates or []):
        name = gate.get("name", "")
        causes.extend(validate_qualified_name(name, f"{path}[{i}]"))
        if name in seen:
            causes.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return causes


# --- volumes ----------------------------------------------------------------------------------------------


def validate_volumes(volumes: list[Mapping[str, Any]] | None, path: str) -> tuple[set[str], list[Cause]]:
    """``ValidateVolumes``: unique DNS-label names and exactly one source each; returns the usable names."""
    names: set[str] = set()
    causes: list[Cause] = []
    for i, volume in enumerate(volumes or []):
        item = f"{path}[{i}]"
        name = volume.get("name") or ""
        errs = _validate_volume_source(volume, item)
        if not name:
            errs.append(required(f"{item}.name"))
        else:
            errs.extend(validate_dns1123_label(name, f"{item}.name"))
        if name in names:
            errs.append(duplicate(f"{item}.name", name))
        if errs:
            causes.extend(errs)
        else:
            names.add(name)
    return names, causes


def _validate_volume_source(volume: Mapping[str, Any], path: str) -> list[Cause]:
    sources = [s for s in VOLUME_SOURCES if volume.get(s) is not None]
    if not sources:
        return [required(path, "must specify a volume type")]
    causes = [forbidden(f"{path}.{extra}", "may not specify more than 1 volume type") for extra in sources[1:]]
    source, body = sources[0], volume[sources[0]]
    required_field = {"hostPath": "path", "secret": "secretName", "configMap": "name",
                      "persistentVolumeClaim": "claimName", "nfs": "server"}.get(source)
    if required_field and not body.get(required_field):
        causes.append(required(f"{path}.{source}.{required_field}"))
    elif source == "hostPath":
        causes.extend(_validate_host_path(body, f"{path}.hostPath"))
    causes.extend(validate_projecting_source(source, body, f"{path}.{source}"))
    return causes


HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                   "Socket")  # sorted, as kube lists them


def _validate_host_path(source: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateHostPathVolumeSource``: no ``..`` element in the path (one error however many), a known type."""
    causes = validate_no_backsteps(source["path"], f"{path}.path")
    kind = source.get("type")
    if kind is not None and kind not in HOST_PATH_TYPES:
        causes.append(not_supported(f"{path}.type", kind, HOST_PATH_TYPES))
    return causes


# --- containers -------------------------------------------------------------------------------------------


def validate_containers(containers: list[Mapping[str, Any]] | None, volumes: set[str], grace: int | None,
                        path: str) -> list[Cause]:
    """``validateContainers``: at least one, unique names, probes and hooks, no conflicting host ports."""
    if not containers:
        return [required(path)]
    causes: list[Cause] = []
    names: set[str] = set()
    for i, container in enumerate(containers):
        item = f"{path}[{i}]"
        causes.extend(_validate_container_common(container, volumes, item))
        name = container.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{item}.name", name))
        names.add(name)
        causes.extend(_validate_hooks_and_probes(container, grace, item))
        if container.get("restartPolicy") is not None:
            causes.append(forbidden(f"{item}.restartPolicy", "may not be set for non-init containers"))
    causes.extend(_host_port_conflicts(containers, path))
    return causes


def validate_init_containers(containers: list[Mapping[str, Any]] | None,
                             regular: list[Mapping[str, Any]] | None, volumes: set[str], grace: int | None,
                             path: str) -> list[Cause]:
    causes: list[Cause] = []
    names = {c.get("name") or "" for c in regular or []}
    for i, container in enumerate(containers or []):
        item = f"{path}[{i}]"
        causes.extend(_validate_container_common(container, volumes, item))
        policy = container.get("restartPolicy")
        if policy is not None and policy != "Always":
            causes.append(not_supported(f"{item}.restartPolicy", policy, ("Always",)))
        name = container.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{item}.name", name))
        elif name:
            names.add(name)
        causes.extend(_host_port_conflicts([container], path, offset=i))
        if policy == "Always":
            causes.extend(_validate_hooks_and_probes(container, grace, item))
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if container.get(key) is not None:
                    causes.append(forbidden(f"{item}.{key}",
                                            "may not be set for init containers without restartPolicy=Always"))
    return causes


def validate_ephemeral_containers(spec: Mapping[str, Any], volumes: set[str], path: str) -> list[Cause]:
    """``validateEphemeralContainers``: names unique across all of the pod's containers, a target that is one of
    its (non-ephemeral) containers, and none of the fields that would make the pod rely on a debugging container
    (``EPHEMERAL_FORBIDDEN_FIELDS``, subPath mounts)."""
    others = [c.get("name") or "" for kind in ("containers", "initContainers") for c in spec.get(kind) or []]
    names = set(others)
    causes: list[Cause] = []
    for i, container in enumerate(spec.get("ephemeralContainers") or []):
        item = f"{path}[{i}]"
        causes.extend(_validate_container_common(container, volumes, item))
        name = container.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{item}.name", name))
        else:
            names.add(name)
        target = container.get("targetContainerName") or ""
        if target and target not in others:
            causes.append(not_found(f"{item}.targetContainerName", target))
        causes.extend(forbidden(f"{item}.{key}", "cannot be set for an Ephemeral Container")
                      for key in EPHEMERAL_FORBIDDEN_FIELDS if not _is_zero(container.get(key)))
        for j, mount in enumerate(container.get("volumeMounts") or []):
            causes.extend(forbidden(f"{item}.volumeMounts[{j}].{key}", "cannot be set for an Ephemeral Container")
                          for key in ("subPath", "subPathExpr") if mount.get(key))
    return causes


def _is_zero(value: Any) -> bool:
    """Go's zero value: unset, false, empty, or a struct/map/list of nothing but zeros (``resources: {}``)."""
    if isinstance(value, Mapping):
        return all(_is_zero(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return not value


def _validate_container_common(container: Mapping[str, Any], volumes: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    name = container.get("name") or ""
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes.extend(validate_dns1123_label(name, f"{path}.name"))
    if not container.get("image"):
        causes.append(required(f"{path}.image"))
    causes.extend(validate_choice(container.get("terminationMessagePolicy"), TERMINATION_MESSAGE_POLICIES,
                                   f"{path}.terminationMessagePolicy"))
    causes.extend(validate_container_ports(container.get("ports"), f"{path}.ports"))
    causes.extend(validate_env(container.get("env"), f"{path}.env"))
    causes.extend(_validate_env_from(container.get("envFrom"), f"{path}.envFrom"))
    causes.extend(_validate_volume_mounts(container.get("volumeMounts"), volumes, f"{path}.volumeMounts"))
    causes.extend(validate_choice(container.get("imagePullPolicy"), PULL_POLICIES, f"{path}.imagePullPolicy"))
    causes.extend(validate_resource_requirements(container.get("resources"), f"{path}.resources"))
    causes.extend(validate_security_context_ids(container.get("securityContext"), f"{path}.securityContext",
                                                ("runAsUser", "runAsGroup")))
    return causes


def validate_security_context_ids(context: Mapping[str, Any] | None, path: str,
                                  keys: tuple[str, ...]) -> list[Cause]:
    """``IsValidUserID``/``IsValidGroupID`` on a pod's or container's securityContext: ids are 0..2^31-1 (the pod
    also checks each of ``supplementalGroups``)."""
    if not context:
        return []
    ids = [(f"{path}.{key}", context.get(key)) for key in keys]
    if "fsGroup" in keys:
        groups = context.get("supplementalGroups") or []
        ids += [(f"{path}.supplementalGroups[{i}]", gid) for i, gid in enumerate(groups)]
    return [invalid(field, value, inclusive_range_error(0, MAX_INT32)) for field, value in ids
            if value is not None and not 0 <= value <= MAX_INT32]


def validate_container_ports(ports: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports or []):
        item = f"{path}[{i}]"
        name = port.get("name") or ""
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                causes.extend(invalid(f"{item}.name", name, msg) for msg in msgs)
            elif name in names:
                causes.append(duplicate(f"{item}.name", name))
            else:
                names.add(name)
        container_port = port.get("containerPort") or 0
        if container_port == 0:
            causes.append(required(f"{item}.containerPort"))
        else:
            causes.extend(invalid(f"{item}.containerPort", container_port, msg)
                          for msg in is_valid_port_num(container_port))
        host_port = port.get("hostPort") or 0
        if host_port != 0:
            causes.extend(invalid(f"{item}.hostPort", host_port, m) for m in is_valid_port_num(host_port))
        causes.extend(validate_choice(port.get("protocol"), PROTOCOLS, f"{item}.protocol"))
    return causes


def _host_port_conflicts(containers: list[Mapping[str, Any]], path: str, offset: int = 0) -> list[Cause]:
    """``AccumulateUniqueHostPorts``: one ``protocol/hostIP/hostPort`` per pod."""
    seen: set[str] = set()
    causes = []
    for ci, container in enumerate(containers):
        for pi, port in enumerate(container.get("ports") or []):
            host_port = port.get("hostPort") or 0
            if not host_port:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{host_port}"
            if key in seen:
                causes.append(duplicate(f"{path}[{ci + offset}].ports[{pi}].hostPort", key))
            seen.add(key)
    return causes


def validate_env(env: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, var in enumerate(env or []):
        item = f"{path}[{i}]"
        name = var.get("name") or ""
        if not name:
            causes.append(required(f"{item}.name"))
        else:
            causes.extend(invalid(f"{item}.name", name, msg) for msg in is_env_var_name(name))
        causes.extend(_validate_env_value_from(var, f"{item}.valueFrom"))
    return causes


def _validate_env_value_from(var: Mapping[str, Any], path: str) -> list[Cause]:
    value_from = var.get("valueFrom")
    if value_from is None:
        return []
    causes: list[Cause] = []
    sources = [key for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
               if value_from.get(key) is not None]
    if "fieldRef" in sources:
        causes.extend(_validate_field_ref(value_from["fieldRef"], f"{path}.fieldRef"))
    if "resourceFieldRef" in sources:
        resource = value_from["resourceFieldRef"].get("resource") or ""
        if not resource:
            causes.append(required(f"{path}.resourceFieldRef.resource"))
        elif resource not in _ENV_RESOURCE_FIELDS and not resource.startswith(("requests.hugepages-",
                                                                                "limits.hugepages-")):
            causes.append(not_supported(f"{path}.resourceFieldRef.resource", resource, _ENV_RESOURCE_FIELDS))
    for key in ("configMapKeyRef", "secretKeyRef"):
        if key in sources:
            causes.extend(_validate_key_selector(value_from[key], f"{path}.{key}"))
    if not sources:
        causes.append(invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                        "or `secretKeyRef`"))
    elif var.get("value"):
        causes.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(sources) > 1:
        causes.append(invalid(path, "", "may not have more than one field specified at a time"))
    return causes


def _validate_field_ref(ref: Mapping[str, Any], path: str) -> list[Cause]:
    if not ref.get("apiVersion"):
        return [required(f"{path}.apiVersion")]
    field_path = ref.get("fieldPath") or ""
    if not field_path:
        return [required(f"{path}.fieldPath")]
    if "[" in field_path and field_path.endswith("]"):
        base, _, subscript = field_path[:-1].partition("[")
        subscript = subscript.strip("'")
        if base == "metadata.annotations":
            return validate_qualified_name(subscript.lower(), path)
        if base == "metadata.labels":
            return validate_qualified_name(subscript, path)
        return [invalid(path, base, "does not support subscript")]
    if field_path not in _ENV_FIELD_PATHS:
        return [not_supported(f"{path}.fieldPath", field_path, _ENV_FIELD_PATHS)]
    return []


def _validate_key_selector(selector: Mapping[str, Any], path: str) -> list[Cause]:
    name = selector.get("name") or ""
    causes = [invalid(f"{path}.name", name, msg) for msg in name_is_dns_subdomain(name, False)]
    key = selector.get("key") or ""
    if not key:
        causes.append(required(f"{path}.key"))
    else:
        causes.extend(invalid(f"{path}.key", key, msg) for msg in is_config_map_key(key))
    return causes


def _validate_env_from(sources: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, source in enumerate(sources or []):
        item = f"{path}[{i}]"
        prefix = source.get("prefix") or ""
        if prefix:
            causes.extend(invalid(f"{item}.prefix", prefix, msg) for msg in is_env_var_name(prefix))
        refs = [key for key in ("configMapRef", "secretRef") if source.get(key) is not None]
        for key in refs:
            name = source[key].get("name") or ""
            if not name:
                causes.append(required(f"{item}.{key}.name"))
            else:
                causes.extend(invalid(f"{item}.{key}.name", name, m) for m in name_is_dns_subdomain(name, True))
        if not refs:
            causes.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            causes.append(invalid(path, "", "may not have more than one field specified at a time"))
    return causes


def _validate_volume_mounts(mounts: list[Mapping[str, Any]] | None, volumes: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts or []):
        item = f"{path}[{i}]"
        name = mount.get("name") or ""
        if not name:
            causes.append(required(f"{item}.name"))
        if name not in volumes:
            causes.append(not_found(f"{item}.name", name))
        mount_path = mount.get("mountPath") or ""
        if not mount_path:
            causes.append(required(f"{item}.mountPath"))
        if mount_path in mount_points:
            causes.append(invalid(f"{item}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        for key in ("subPath", "subPathExpr"):
            causes.extend(validate_local_descending_path(mount.get(key) or "", f"{item}.{key}"))
        if mount.get("subPath") and mount.get("subPathExpr"):
            causes.append(invalid(f"{item}.subPathExpr", mount["subPathExpr"],
                                  "subPathExpr and subPath are mutually exclusive"))
    return causes


# --- probes and lifecycle hooks ---------------------------------------------------------------------------


def _validate_hooks_and_probes(container: Mapping[str, Any], grace: int | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    lifecycle = container.get("lifecycle")
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            if lifecycle.get(hook) is not None:
                causes.extend(_validate_handler(lifecycle[hook], grace, f"{path}.lifecycle.{hook}", lifecycle=True))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if probe is None:
            continue
        item = f"{path}.{kind}"
        causes.extend(_validate_handler(probe, grace, item, lifecycle=False))
        for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                    "failureThreshold"):
            causes.extend(validate_nonnegative(probe.get(key), f"{item}.{key}"))
        probe_grace = probe.get("terminationGracePeriodSeconds")
        if probe_grace is not None and probe_grace <= 0:
            causes.append(invalid(f"{item}.terminationGracePeriodSeconds", probe_grace, "must be greater than 0"))
        if kind != "readinessProbe" and probe.get("successThreshold", 1) != 1:
            causes.append(invalid(f"{item}.successThreshold", probe.get("successThreshold"), "must be 1"))
        if kind == "readinessProbe" and probe_grace is not None:
            causes.append(invalid(f"{item}.terminationGracePeriodSeconds", probe_grace,
                                  "must not be set for readinessProbes"))
    return causes


def _validate_handler(handler: Mapping[str, Any], grace: int | None, path: str, *, lifecycle: bool) -> list[Cause]:
    kinds = ("exec", "httpGet", "tcpSocket", "sleep") if lifecycle else ("exec", "httpGet", "tcpSocket", "grpc")
    present = [kind for kind in kinds if handler.get(kind) is not None]
    if not present:
        return [required(path, "must specify a handler type")]
    causes = [forbidden(f"{path}.{extra}", "may not specify more than 1 handler type") for extra in present[1:]]
    kind, action = present[0], handler[present[0]]
    item = f"{path}.{kind}"
    if kind == "exec" and not action.get("command"):
        causes.append(required(f"{item}.command"))
    elif kind == "httpGet":
        if not action.get("path"):
            causes.append(required(f"{item}.path"))
        causes.extend(validate_port_num_or_name(action.get("port"), f"{item}.port"))
        if action.get("scheme") not in ("HTTP", "HTTPS"):
            causes.append(not_supported(f"{item}.scheme", action.get("scheme") or "", ("HTTP", "HTTPS")))
    elif kind == "tcpSocket":
        causes.extend(validate_port_num_or_name(action.get("port"), f"{item}.port"))
    elif kind == "grpc":
        causes.extend(validate_port_num_or_name(action.get("port") or 0, f"{item}.port"))
    elif kind == "sleep" and grace is not None:
        seconds = action.get("seconds") or 0
        if seconds <= 0 or seconds > grace:
            causes.append(invalid(item, seconds, "must be greater than 0 and less than terminationGracePeriodSeconds "
                                                 f"({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature "
                                                 "gate for zero sleep."))
    return causes


def validate_port_num_or_name(port: Any, path: str) -> list[Cause]:
    """An ``IntOrString`` port: 1-65535, or an IANA service name."""
    if isinstance(port, str):
        return [invalid(path, port, msg) for msg in is_valid_port_name(port)]
    number = int(port or 0)
    return [invalid(path, number, msg) for msg in is_valid_port_num(number)]
