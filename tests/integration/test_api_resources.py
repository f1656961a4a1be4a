"""``kubectl api-resources -o wide`` against kubelab reads as against kube-apiserver 1.32 with its default feature
gates, and ``kubectl apply --prune`` works with kubectl's default allowlist (which names kinds from every group).

``KUBE_1_32`` is kube-apiserver v1.32's table (no metrics-server, no aggregated APIs, beta groups off);
kubelab also serves
``metrics.k8s.io`` (its built-in metrics API, what metrics-server adds to a kube cluster): ``EXTRA_IN_KUBELAB``.
Rows of custom resources (other test modules' CRDs) are left out of the comparison.
"""

from __future__ import annotations

import pytest

from conftest import Kubectl

pytestmark = pytest.mark.kubectl

ALL = "create,delete,deletecollection,get,list,patch,update,watch"
NS = "create,delete,get,list,patch,update,watch"

# NAME SHORTNAMES APIVERSION NAMESPACED KIND VERBS CATEGORIES, as kubectl 1.32 prints them against kube 1.32.
KUBE_1_32 = """
bindings  - v1 true Binding create -
componentstatuses cs v1 false ComponentStatus get,list -
configmaps cm v1 true ConfigMap ALL -
endpoints ep v1 true Endpoints ALL -
events ev v1 true Event ALL -
limitranges limits v1 true LimitRange ALL -
namespaces ns v1 false Namespace NS -
nodes no v1 false Node ALL -
persistentvolumeclaims pvc v1 true PersistentVolumeClaim ALL -
persistentvolumes pv v1 false PersistentVolume ALL -
pods po v1 true Pod ALL all
podtemplates - v1 true PodTemplate ALL -
replicationcontrollers rc v1 true ReplicationController ALL all
resourcequotas quota v1 true ResourceQuota ALL -
secrets - v1 true Secret ALL -
serviceaccounts sa v1 true ServiceAccount ALL -
services svc v1 true Service ALL all
mutatingwebhookconfigurations - admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration ALL api-extensions
validatingadmissionpolicies - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy ALL api-extensions
validatingadmissionpolicybindings - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding ALL api-extensions
validatingwebhookconfigurations - admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration ALL api-extensions
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition ALL api-extensions
apiservices - apiregistration.k8s.io/v1 false APIService ALL api-extensions
controllerrevisions - apps/v1 true ControllerRevision ALL -
daemonsets ds apps/v1 true DaemonSet ALL all
deployments deploy apps/v1 true Deployment ALL all
replicasets rs apps/v1 true ReplicaSet ALL all
statefulsets sts apps/v1 true StatefulSet ALL all
selfsubjectreviews - authentication.k8s.io/v1 false SelfSubjectReview create -
tokenreviews - authentication.k8s.io/v1 false TokenReview create -
localsubjectaccessreviews - authorization.k8s.io/v1 true LocalSubjectAccessReview create -
selfsubjectaccessreviews - authorization.k8s.io/v1 false SelfSubjectAccessReview create -
selfsubjectrulesreviews - authorization.k8s.io/v1 false SelfSubjectRulesReview create -
subjectaccessreviews - authorization.k8s.io/v1 false SubjectAccessReview create -
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler ALL all
cronjobs cj batch/v1 true CronJob ALL all
jobs - batch/v1 true Job ALL all
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest ALL -
leases - coordination.k8s.io/v1 true Lease ALL -
endpointslices - discovery.k8s.io/v1 true EndpointSlice ALL -
events ev events.k8s.io/v1 true Event ALL -
flowschemas - flowcontrol.apiserver.k8s.io/v1 false FlowSchema ALL -
prioritylevelconfigurations - flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration ALL -
ingressclasses - networking.k8s.io/v1 false IngressClass ALL -
ingresses ing networking.k8s.io/v1 true Ingress ALL -
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy ALL -
runtimeclasses - node.k8s.io/v1 false RuntimeClass ALL -
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget ALL -
clusterrolebindings - rbac.authorization.k8s.io/v1 false ClusterRoleBinding ALL -
clusterroles - rbac.authorization.k8s.io/v1 false ClusterRole ALL -
rolebindings - rbac.authorization.k8s.io/v1 true RoleBinding ALL -
roles - rbac.authorization.k8s.io/v1 true Role ALL -
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass ALL -
csidrivers - storage.k8s.io/v1 false CSIDriver ALL -
csinodes - storage.k8s.io/v1 false CSINode ALL -
csistoragecapacities - storage.k8s.io/v1 true CSIStorageCapacity ALL -
storageclasses sc storage.k8s.io/v1 false StorageClass ALL -
volumeattachments - storage.k8s.io/v1 false VolumeAttachment ALL -
"""

EXTRA_IN_KUBELAB = {("nodes", "metrics.k8s.io/v1beta1"), ("pods", "metrics.k8s.io/v1beta1")}

Row = tuple[str, str, str, str, str, str, str]


def kube_rows() -> dict[tuple[str, str], Row]:
    rows: dict[tuple[str, str], Row] = {}
    for line in KUBE_1_32.strip().splitlines():
        name, short, version, namespaced, kind, verbs, categories = line.split()
        verbs = {"ALL": ALL, "NS": NS}.get(verbs, verbs)
        rows[(name, version)] = (name, "" if short == "-" else short, version, namespaced, kind, verbs,
                                 "" if categories == "-" else categories)
    return rows


def built_in(version: str) -> bool:
    """A built-in group's version: the core group, a dotless group (apps, batch …) or one of ``*.k8s.io``."""
    group = version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def kubelab_rows(kubectl: Kubectl) -> dict[tuple[str, str], Row]:
    lines = kubectl("api-resources", "-o", "wide").stdout.splitlines()
    header = lines[0]
    starts = [header.index(column) for column in
              ("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES")]
    rows: dict[tuple[str, str], Row] = {}
    for line in lines[1:]:
        cells = [line[start:end].strip() for start, end in zip(starts, [*starts[1:], None], strict=False)]
        row: Row = tuple(cells)  # type: ignore[assignment]
        if built_in(row[2]):
            rows[(row[0], row[2])] = row
    return rows


def test_api_resources_match_kube_1_32(kubectl: Kubectl) -> None:
    expected = {key: row for key, row in kube_rows().items()}
    served = {key: row for key, row in kubelab_rows(kubectl).items()
              if key not in EXTRA_IN_KUBELAB}
    assert sorted(set(expected) - set(served)) == [], "served by kube 1.32, missing here"
    assert sorted(set(served) - set(expected)) == [], "served here, not by kube 1.32"
    assert [served[key] for key in expected] == list(expected.values())


def test_prune_with_the_default_allowlist(kubectl: Kubectl, ns: str) -> None:
    """kubectl's default prune allowlist names ConfigMaps … PersistentVolumeClaims, Ingresses, StatefulSets …:
    every kind it names must be served, or ``apply --prune`` fails with ``no matches for kind``."""
    first = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: {ns}, labels: {{app: prune}}}}\n"
             f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b, namespace: {ns}, labels: {{app: prune}}}}\n")
    kubectl("apply", "-f", "-", input=first)
    second = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: {ns}, labels: {{app: prune}}}}\n"
    result = kubectl("apply", "-l", "app=prune", "--prune", "-f", "-", input=second, check=False)
    assert result.returncode == 0, result.stderr
    assert "configmap/b pruned" in result.stdout
    names = kubectl("-n", ns, "get", "configmaps", "-l", "app=prune", "-o", "name").stdout.split()
    assert names == ["configmap/a"]
