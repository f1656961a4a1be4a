"""Namespaces, Services, ConfigMaps, Events, Leases, and the strategy registry."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from apimachinery.errors import Cause
from apiserver.registry import all_strategies
from apiserver.registry.configmaps import ConfigMapStrategy
from apiserver.registry.events import EventStrategy
from apiserver.registry.leases import LeaseStrategy
from apiserver.registry.namespaces import NamespaceStrategy
from apiserver.registry.services import ServiceStrategy

NS = NamespaceStrategy()
SVC = ServiceStrategy()
CM = ConfigMapStrategy()
EV = EventStrategy()
LEASE = LeaseStrategy()


def ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


# --- registry ----------------------------------------------------------------------------------------------------


def test_all_strategies_cover_the_served_resources() -> None:
    served = {(s.group, s.resource, s.kind, s.namespaced, s.short_names, s.categories) for s in all_strategies()}
    assert [s.version for s in all_strategies() if s.resource == "horizontalpodautoscalers"] == ["v2", "v1"]
    assert served == {
        ("", "pods", "Pod", True, ("po",), ("all",)),
        ("", "nodes", "Node", False, ("no",), ()),
        ("", "limitranges", "LimitRange", True, ("limits",), ()),
        ("", "resourcequotas", "ResourceQuota", True, ("quota",), ()),
        ("", "persistentvolumes", "PersistentVolume", False, ("pv",), ()),
        ("", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ()),
        ("storage.k8s.io", "storageclasses", "StorageClass", False, ("sc",), ()),
        ("storage.k8s.io", "csidrivers", "CSIDriver", False, (), ()),
        ("storage.k8s.io", "csinodes", "CSINode", False, (), ()),
        ("storage.k8s.io", "csistoragecapacities", "CSIStorageCapacity", True, (), ()),
        ("storage.k8s.io", "volumeattachments", "VolumeAttachment", False, (), ()),
        ("", "namespaces", "Namespace", False, ("ns",), ()),
        ("", "replicationcontrollers", "ReplicationController", True, ("rc",), ("all",)),
        ("", "services", "Service", True, ("svc",), ("all",)),
        ("", "configmaps", "ConfigMap", True, ("cm",), ()),
        ("", "secrets", "Secret", True, (), ()),
        ("", "serviceaccounts", "ServiceAccount", True, ("sa",), ()),
        ("", "endpoints", "Endpoints", True, ("ep",), ()),
        ("", "events", "Event", True, ("ev",), ()),
        ("apps", "deployments", "Deployment", True, ("deploy",), ("all",)),
        ("apps", "daemonsets", "DaemonSet", True, ("ds",), ("all",)),
        ("apps", "controllerrevisions", "ControllerRevision", True, (), ()),
        ("apps", "statefulsets", "StatefulSet", True, ("sts",), ("all",)),
        ("apps", "replicasets", "ReplicaSet", True, ("rs",), ("all",)),
        ("autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ("hpa",), ("all",)),
        ("batch", "jobs", "Job", True, (), ("all",)),
        ("batch", "cronjobs", "CronJob", True, ("cj",), ("all",)),
        ("coordination.k8s.io", "leases", "Lease", True, (), ()),
        ("rbac.authorization.k8s.io", "roles", "Role", True, (), ()),
        ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False, (), ()),
        ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True, (), ()),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False, (), ()),
        ("certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest", False, ("csr",), ()),
        ("discovery.k8s.io", "endpointslices", "EndpointSlice", True, (), ()),
        ("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ()),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False,
         (), ("api-extensions",)),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False,
         (), ("api-extensions",)),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False, (),
         ("api-extensions",)),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding",
         False, (), ("api-extensions",)),
        ("apiregistration.k8s.io", "apiservices", "APIService", False, (), ("api-extensions",)),
        ("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview", False, (), ()),
        ("authentication.k8s.io", "tokenreviews", "TokenReview", False, (), ()),
        ("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", True, (), ()),
        ("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, (), ()),
        ("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, (), ()),
        ("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", False, (), ()),
        ("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", False, ("crd", "crds"),
         ("api-extensions",)),
        ("", "podtemplates", "PodTemplate", True, (), ()),
        ("", "componentstatuses", "ComponentStatus", False, ("cs",), ()),
        ("events.k8s.io", "events", "Event", True, ("ev",), ()),
        ("networking.k8s.io", "ingresses", "Ingress", True, ("ing",), ()),
        ("networking.k8s.io", "ingressclasses", "IngressClass", False, (), ()),
        ("networking.k8s.io", "networkpolicies", "NetworkPolicy", True, ("netpol",), ()),
        ("node.k8s.io", "runtimeclasses", "RuntimeClass", False, (), ()),
        ("scheduling.k8s.io", "priorityclasses", "PriorityClass", False, ("pc",), ()),
        ("flowcontrol.apiserver.k8s.io", "flowschemas", "FlowSchema", False, (), ()),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "PriorityLevelConfiguration", False, (), ()),
    }
    generations = {s.resource for s in all_strategies() if s.bumps_generation}
    assert generations == {"replicationcontrollers", "replicasets", "deployments", "daemonsets", "statefulsets",
                           "jobs", "cronjobs", "endpointslices", "poddisruptionbudgets", "horizontalpodautoscalers",
                           "customresourcedefinitions", "validatingadmissionpolicies",
                           "validatingadmissionpolicybindings", "podtemplates", "ingresses", "ingressclasses",
                           "networkpolicies", "flowschemas", "prioritylevelconfigurations"}
    assert {s.resource for s in all_strategies() if "scale" in s.subresources} == \
        generations - {"daemonsets", "endpointslices", "jobs", "cronjobs", "poddisruptionbudgets",
                       "horizontalpodautoscalers", "customresourcedefinitions", "validatingadmissionpolicies",
                       "validatingadmissionpolicybindings", "podtemplates", "ingresses", "ingressclasses",
                       "networkpolicies", "flowschemas", "prioritylevelconfigurations"}


def test_metadata_names_follow_each_resources_rule() -> None:
    from apiserver.registry.metadata import validate_meta_create

    by_resource = {s.resource: s for s in all_strategies()}
    generated = {"name": "web-x7k2p", "generateName": "web-", "namespace": "default"}
    assert validate_meta_create(dict(generated), by_resource["pods"]) == []
    assert [c.field for c in validate_meta_create({"name": "a.b", "namespace": "x"}, by_resource["services"])] == [
        "metadata.name"]
    assert validate_meta_create({"name": "a.b"}, by_resource["nodes"]) == []
    assert [c.message for c in validate_meta_create({"name": "a.b"}, by_resource["namespaces"])] == [
        'Invalid value: "a.b": must not contain dots']


def test_every_row_matches_its_columns() -> None:
    for strategy in all_strategies():
        obj = {"metadata": {"name": "x", "namespace": "default", "creationTimestamp": ago(hours=3)}}
        assert len(strategy.row(obj)) == len(strategy.columns()), strategy.kind


# --- namespaces --------------------------------------------------------------------------------------------------


def test_namespace_create_defaults() -> None:
    ns = {"metadata": {"name": "team-a"}}
    NS.prepare_for_create(ns)
    assert ns == {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
                  "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    assert NS.validate(ns) == []
    assert NS.name_validator("team.a") == ["must not contain dots"]


def test_namespace_update_keeps_spec_status_and_name_label() -> None:
    old = {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
           "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    new = {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "spoofed", "team": "a"}},
           "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}
    NS.prepare_for_update(new, old)
    assert new == {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a", "team": "a"}},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def test_namespace_phase_follows_deletion() -> None:
    old = {"metadata": {"name": "a"}, "status": {"phase": "Active"}}
    terminating = {"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}
    assert errors(NS.validate_status_update(terminating, old)) == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]
    terminating["metadata"]["deletionTimestamp"] = ago(seconds=1)
    assert NS.validate_status_update(terminating, old) == []


def test_namespace_finalize_changes_only_finalizers() -> None:
    old = {"metadata": {"name": "a", "deletionTimestamp": ago(seconds=1)}, "spec": {"finalizers": ["kubernetes"]},
           "status": {"phase": "Terminating"}}
    new = {"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"finalizers": ["bogus"]}, "status": {}}
    NS.prepare_for_finalize_update(new, old)
    assert new["status"] == {"phase": "Terminating"} and "labels" not in new["metadata"]
    assert errors(NS.validate_finalize_update(new, old)) == [
        'spec.finalizers: Invalid value: "bogus": name is neither a standard finalizer name nor is it fully qualified']


def test_namespace_fields_and_table() -> None:
    ns = {"metadata": {"name": "team-a", "creationTimestamp": ago(days=10)}, "status": {"phase": "Active"}}
    assert NS.selectable_fields(ns) == {"metadata.name": "team-a", "name": "team-a", "status.phase": "Active"}
    assert NS.row(ns) == ["team-a", "Active", "10d"]


# --- services ----------------------------------------------------------------------------------------------------


def service(name: str = "web", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    body.update(spec)
    return {"metadata": {"name": name, "namespace": namespace, "creationTimestamp": ago(hours=3)}, "spec": body}


def test_service_defaults_and_allocation() -> None:
    svc = service()
    SVC.prepare_for_create(svc)
    spec = svc["spec"]
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert spec["clusterIPs"] == [spec["clusterIP"]] and spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["clusterIP"].startswith("10.") and spec["clusterIP"] != "10.96.0.1"
    assert svc["status"] == {"loadBalancer": {}}
    assert SVC.validate(svc) == []
    again = service()
    SVC.prepare_for_create(again)
    assert again["spec"]["clusterIP"] == spec["clusterIP"]  # stable
    assert SVC.name_validator("1web")[0].startswith("a DNS-1035 label must consist of lower case alphanumeric")


def test_kubernetes_service_gets_the_first_address() -> None:
    svc = service("kubernetes", ports=[{"name": "https", "port": 443, "targetPort": 6443}])
    SVC.prepare_for_create(svc)
    assert svc["spec"]["clusterIP"] == "10.96.0.1"


def test_node_port_service() -> None:
    svc = service(type="NodePort")
    SVC.prepare_for_create(svc)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    assert SVC.validate(svc) == []
    assert SVC.row(svc)[1:5] == ["NodePort", svc["spec"]["clusterIP"], "<none>", f"80:{node_port}/TCP"]


def test_service_validation() -> None:
    svc = service(ports=[{"port": 80}, {"port": 80, "name": "Bad_Name"}], sessionAffinity="Sticky", type="Cheap")
    SVC.prepare_for_create(svc)
    causes = errors(SVC.validate(svc))
    assert causes[0] == "spec.ports[0].name: Required value"
    assert causes[1].startswith('spec.ports[1].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label')
    assert causes[2:] == [
        'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"',
        'spec.type: Unsupported value: "Cheap": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
        '"NodePort"',
        'spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), '
        'Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}',
    ]


def test_requested_cluster_ip_must_be_in_range() -> None:
    svc = service(clusterIP="192.168.1.1")
    SVC.prepare_for_create(svc)
    assert errors(SVC.validate(svc)) == [
        'spec.clusterIPs: Invalid value: []string{"192.168.1.1"}: failed to allocate IP 192.168.1.1: provided IP is '
        "not in the valid range. The range of valid IPs is 10.96.0.0/12"]


def test_headless_service() -> None:
    svc = service(clusterIP="None")
    SVC.prepare_for_create(svc)
    assert svc["spec"]["clusterIPs"] == ["None"] and SVC.validate(svc) == []
    assert SVC.row(svc)[2] == "None"


def test_service_update_keeps_allocations_and_refuses_moves() -> None:
    old = service(type="NodePort")
    SVC.prepare_for_create(old)
    new = service(type="NodePort", selector={"app": "web2"})
    SVC.prepare_for_update(new, old)
    assert new["spec"]["clusterIP"] == old["spec"]["clusterIP"]
    assert new["spec"]["ports"][0]["nodePort"] == old["spec"]["ports"][0]["nodePort"]
    assert SVC.validate_update(new, old) == []
    moved = copy.deepcopy(new)
    moved["spec"]["clusterIP"] = "10.96.0.99"
    moved["spec"]["clusterIPs"] = ["10.96.0.99"]
    assert errors(SVC.validate_update(moved, old)) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.99"}: may not change once set']


def test_load_balancer_and_external_name_cells() -> None:
    lb = service(type="LoadBalancer")
    SVC.prepare_for_create(lb)
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True
    assert SVC.row(lb)[3] == "<pending>"
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    assert SVC.row(lb)[3] == "203.0.113.7"
    external = service(type="ExternalName", externalName="db.example.com", ports=[])
    SVC.prepare_for_create(external)
    assert SVC.validate(external) == []
    assert SVC.row(external)[1:6] == ["ExternalName", "<none>", "db.example.com", "<none>", "3h"]


def test_service_table_columns() -> None:
    assert [(c.name, c.priority) for c in SVC.columns()] == [
        ("Name", 0), ("Type", 0), ("Cluster-IP", 0), ("External-IP", 0), ("Port(s)", 0), ("Age", 0), ("Selector", 1)]
    svc = service(ports=[{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}])
    SVC.prepare_for_create(svc)
    assert SVC.row(svc)[4:] == ["80/TCP,53/UDP", "3h", "app=web"]


# --- configmaps --------------------------------------------------------------------------------------------------


def test_configmap_keys_and_table() -> None:
    cm = {"metadata": {"name": "cfg", "creationTimestamp": ago(hours=3)},
          "data": {"app.properties": "a=1", "bad key": "x"}, "binaryData": {"app.properties": "AAAA"}}
    assert errors(CM.validate(cm)) == [
        'data[app.properties]: Invalid value: "app.properties": duplicate of key present in binaryData',
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, \'-\', '
        "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')",
    ]
    assert CM.row(cm) == ["cfg", 3, "3h"]


def test_configmap_size_limit() -> None:
    cm = {"metadata": {"name": "big"}, "data": {"blob": "x" * (1024 * 1024 + 1)}}
    assert errors(CM.validate(cm)) == [": Too long: may not be more than 1048576 bytes"]


def test_immutable_configmap() -> None:
    old = {"metadata": {"name": "cfg"}, "data": {"a": "1"}, "immutable": True}
    new = {"metadata": {"name": "cfg"}, "data": {"a": "2"}}
    assert errors(CM.validate_update(new, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


# --- events ------------------------------------------------------------------------------------------------------


def event(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "web-1.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u1",
                           "apiVersion": "v1", "fieldPath": "spec.containers{nginx}"},
        "reason": "Pulled", "message": "Successfully pulled image \"nginx\"\n", "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"}, "count": 3,
        "firstTimestamp": ago(days=10), "lastTimestamp": ago(hours=3)}
    body.update(fields)
    return body


def test_event_namespace_must_match_involved_object() -> None:
    assert EV.validate(event()) == []
    other = event()
    other["involvedObject"]["namespace"] = "kube-system"
    assert errors(EV.validate(other)) == [
        'involvedObject.namespace: Invalid value: "kube-system": does not match event.namespace']


def test_new_style_events_need_a_reporter() -> None:
    new_style = event(eventTime="2024-01-01T00:00:00.000000Z", reason="")
    assert errors(EV.validate(new_style)) == [
        "reportingComponent: Required value",
        'reportingComponent: Invalid value: "": name part must be non-empty',
        "reportingComponent: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
    ]


def test_event_fields_and_table() -> None:
    ev = event()
    fields = EV.selectable_fields(ev)
    assert fields["involvedObject.name"] == "web-1" and fields["involvedObject.kind"] == "Pod"
    assert (fields["reason"], fields["source"], fields["type"], fields["reportingComponent"]) == (
        "Pulled", "kubelet", "Normal", "")
    assert [c.name for c in EV.columns()] == ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source",
                                              "Message", "First Seen", "Count", "Name"]
    assert EV.row(ev) == ["3h", "Normal", "Pulled", "pod/web-1", "spec.containers{nginx}", "kubelet, node-1",
                          'Successfully pulled image "nginx"', "10d", 3, "web-1.17a"]


def test_new_style_event_row_uses_event_time_and_reporter() -> None:
    ev = {"metadata": {"name": "e"}, "eventTime": ago(hours=3).replace("Z", ".123456Z"), "type": "Warning",
          "reason": "FailedScheduling", "involvedObject": {"kind": "Pod", "name": "p"}, "message": "0/1 nodes",
          "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler-host"}
    assert EV.row(ev) == ["3h", "Warning", "FailedScheduling", "pod/p", "", "default-scheduler, "
                          "default-scheduler-host", "0/1 nodes", "3h", 1, "e"]


# --- leases ------------------------------------------------------------------------------------------------------


def test_lease_validation_and_table() -> None:
    lease = {"metadata": {"name": "node-1", "namespace": "kube-node-lease", "creationTimestamp": ago(days=10)},
             "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}}
    assert LEASE.validate(lease) == []
    assert LEASE.row(lease) == ["node-1", "node-1", "10d"]
    lease["spec"].update(leaseDurationSeconds=0, leaseTransitions=-1)
    assert errors(LEASE.validate(lease)) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_type_change_releases_node_ports_and_cluster_ip() -> None:
    old = service(type="NodePort")
    SVC.prepare_for_create(old)
    back = copy.deepcopy(old)
    back["spec"]["type"] = "ClusterIP"
    SVC.prepare_for_update(back, old)
    assert "nodePort" not in back["spec"]["ports"][0] and "externalTrafficPolicy" not in back["spec"]
    assert SVC.validate_update(back, old) == []
    external = copy.deepcopy(old)
    external["spec"].update(type="ExternalName", externalName="db.example.com")
    SVC.prepare_for_update(external, old)
    assert "clusterIP" not in external["spec"] and SVC.validate_update(external, old) == []
