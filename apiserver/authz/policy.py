"""The bootstrap policy (kube's ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``): the roles and bindings every
cluster starts with, reconciled by the apiserver at start-up (``reconcile``).

Each object carries the label ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
``rbac.authorization.kubernetes.io/autoupdate: "true"``; an administrator who sets it to ``false`` keeps their
changes. ``admin``, ``edit`` and ``view`` are aggregated from the ``system:aggregate-to-*`` roles (and whatever
else carries their labels) by the clusterrole-aggregation controller.

Rules are written ``rule("get list watch", "", "pods services")``: verbs, API groups (space separated, "" the
core group) and resources; ``names=`` for resourceNames and ``url("get", "/healthz")`` for non-resource rules.
"""

from __future__ import annotations

from typing import Any

GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
READ = "get list watch"
READ_WRITE = "create delete deletecollection get list patch update watch"
WRITE = "create delete deletecollection patch update"
Obj = dict[str, Any]


def rule(verbs: str, groups: str, resources: str, names: str = "") -> Obj:
    out: Obj = {"verbs": verbs.split(), "apiGroups": groups.split(" ") if groups else [""],
                "resources": resources.split()}
    if names:
        out["resourceNames"] = names.split()
    return out


def url(verbs: str, urls: str) -> Obj:
    return {"verbs": verbs.split(), "nonResourceURLs": urls.split()}


EVENTS = rule("create patch update", " events.k8s.io", "events")


def cluster_role(name: str, rules: list[Obj] | None, labels: dict[str, str] | None = None,
                 aggregate_from: str | None = None) -> Obj:
    role: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole",
                 "metadata": {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})},
                              "annotations": {AUTOUPDATE: "true"}}}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{aggregate_from}": "true"}}]}
    else:
        role["rules"] = rules or []
    return role


def aggregate_to(*targets: str) -> dict[str, str]:
    return {f"rbac.authorization.k8s.io/aggregate-to-{target}": "true" for target in targets}


def binding(name: str, role: str, *subjects: tuple[str, str]) -> Obj:
    """A ClusterRoleBinding of ClusterRole ``role`` to (kind, name) subjects (service accounts ``ns/name``)."""
    out = []
    for subject_kind, subject in subjects:
        if subject_kind == "ServiceAccount":
            ns, _, sa = subject.partition("/")
            out.append({"kind": subject_kind, "name": sa, "namespace": ns})
        else:
            out.append({"kind": subject_kind, "apiGroup": GROUP, "name": subject})
    obj: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": {AUTOUPDATE: "true"}},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role}}
    if out:
        obj["subjects"] = out
    return obj


NODE_RULES = [
    rule("create", "authentication.k8s.io", "tokenreviews"),
    rule("create", "authorization.k8s.io", "localsubjectaccessreviews subjectaccessreviews"),
    rule(READ, "", "services"),
    rule("create get list watch", "", "nodes"),
    rule("patch update", "", "nodes/status"),
    rule("patch update", "", "nodes"),
    rule("create patch update", "", "events"),
    rule(READ, "", "pods"),
    rule("create delete", "", "pods"),
    rule("patch update", "", "pods/status"),
    rule("create", "", "pods/eviction"),
    rule(READ, "", "configmaps secrets"),
    rule("get", "", "persistentvolumeclaims persistentvolumes"),
    rule("get", "", "endpoints"),
    rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
    rule("create delete get patch update", "coordination.k8s.io", "leases"),
    rule("get", "storage.k8s.io", "volumeattachments"),
    rule("create", "", "serviceaccounts/token"),
    rule("get patch update", "", "persistentvolumeclaims/status"),
    rule(READ, "storage.k8s.io", "csidrivers"),
    rule("create delete get patch update", "storage.k8s.io", "csinodes"),
    rule(READ, "node.k8s.io", "runtimeclasses"),
]


def _aggregate_roles() -> list[Obj]:
    return [
        cluster_role("system:aggregate-to-admin", [
            rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
            rule(READ_WRITE, GROUP, "rolebindings roles"),
        ], aggregate_to("admin")),
        cluster_role("system:aggregate-to-edit", [
            rule(READ, "", "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
            rule("impersonate", "", "serviceaccounts"),
            rule(WRITE, "", "pods pods/attach pods/exec pods/portforward pods/proxy"),
            rule("create", "", "pods/eviction"),
            rule(WRITE, "", "configmaps events persistentvolumeclaims replicationcontrollers "
                            "replicationcontrollers/scale secrets serviceaccounts services services/proxy"),
            rule("create", "", "serviceaccounts/token"),
            rule(WRITE, "apps", "daemonsets deployments deployments/rollback deployments/scale replicasets "
                                "replicasets/scale statefulsets statefulsets/scale"),
            rule(WRITE, "autoscaling", "horizontalpodautoscalers"),
            rule(WRITE, "batch", "cronjobs jobs"),
            rule(WRITE, "extensions", "daemonsets deployments deployments/rollback deployments/scale ingresses "
                                      "networkpolicies replicasets replicasets/scale replicationcontrollers/scale"),
            rule(WRITE, "policy", "poddisruptionbudgets"),
            rule(WRITE, "networking.k8s.io", "ingresses networkpolicies"),
            rule(READ_WRITE, "coordination.k8s.io", "leases"),
        ], aggregate_to("edit")),
        cluster_role("system:aggregate-to-view", [
            rule(READ, "", "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods "
                           "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                           "services/status"),
            rule(READ, "", "bindings events limitranges namespaces/status pods/log pods/status "
                           "replicationcontrollers/status resourcequotas resourcequotas/status"),
            rule(READ, "", "namespaces"),
            rule(READ, "discovery.k8s.io", "endpointslices"),
            rule(READ, "apps", "controllerrevisions daemonsets daemonsets/status deployments deployments/scale "
                               "deployments/status replicasets replicasets/scale replicasets/status statefulsets "
                               "statefulsets/scale statefulsets/status"),
            rule(READ, "autoscaling", "horizontalpodautoscalers horizontalpodautoscalers/status"),
            rule(READ, "batch", "cronjobs cronjobs/status jobs jobs/status"),
            rule(READ, "extensions", "daemonsets daemonsets/status deployments deployments/scale "
                                     "deployments/status ingresses ingresses/status networkpolicies replicasets "
                                     "replicasets/scale replicasets/status replicationcontrollers/scale"),
            rule(READ, "policy", "poddisruptionbudgets poddisruptionbudgets/status"),
            rule(READ, "networking.k8s.io", "ingresses ingresses/status networkpolicies"),
        ], aggregate_to("view")),
    ]


def _approver(signer: str) -> Obj:
    return cluster_role(f"system:certificates.k8s.io:{signer.split('/')[-1]}-approver",
                        [rule("approve", "certificates.k8s.io", "signers", names=signer)])


def _component_roles() -> list[Obj]:
    leader = [rule("create", "coordination.k8s.io", "leases")]
    reviews = [rule("create", "authentication.k8s.io", "tokenreviews"),
               rule("create", "authorization.k8s.io", "subjectaccessreviews")]
    return [
        cluster_role("system:kube-controller-manager", [
            EVENTS, *leader,
            rule("get update", "coordination.k8s.io", "leases", names="kube-controller-manager"),
            rule("create", "", "secrets serviceaccounts"), rule("delete", "", "secrets"),
            rule("get", "", "configmaps namespaces secrets serviceaccounts"),
            rule("update", "", "secrets serviceaccounts"), *reviews,
            rule("list watch", "*", "*"), rule("create", "", "serviceaccounts/token"),
        ]),
        cluster_role("system:kube-scheduler", [
            EVENTS, *leader,
            rule("get update", "coordination.k8s.io", "leases", names="kube-scheduler"),
            rule(READ, "", "nodes"), rule("delete get list watch", "", "pods"),
            rule("create", "", "bindings pods/binding"), rule("patch update", "", "pods/status"),
            rule(READ, "", "replicationcontrollers services"), rule(READ, "apps extensions", "replicasets"),
            rule(READ, "apps", "statefulsets"), rule(READ, "policy", "poddisruptionbudgets"),
            rule(READ, "", "persistentvolumeclaims persistentvolumes"), *reviews,
            rule(READ, "storage.k8s.io", "csinodes"), rule(READ, "", "namespaces"),
            rule(READ, "storage.k8s.io", "csidrivers"), rule(READ, "storage.k8s.io", "csistoragecapacities"),
        ]),
        cluster_role("system:kube-dns", [rule("list watch", "", "endpoints services")]),
        cluster_role("system:node", NODE_RULES),
        cluster_role("system:node-bootstrapper", [
            rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests")]),
        cluster_role("system:node-problem-detector", [
            rule("get", "", "nodes"), rule("patch", "", "nodes/status"), EVENTS]),
        cluster_role("system:node-proxier", [
            rule("list watch", "", "endpoints services"), rule(READ, "", "nodes"), EVENTS,
            rule("list watch", "discovery.k8s.io", "endpointslices")]),
        cluster_role("system:kubelet-api-admin", [
            rule(READ, "", "nodes"), rule("proxy", "", "nodes"),
            rule("*", "", "nodes/log nodes/metrics nodes/proxy nodes/stats")]),
        cluster_role("system:heapster", [rule(READ, "", "events namespaces nodes pods"),
                                         rule(READ, "extensions", "deployments")]),
        cluster_role("system:kube-aggregator", [rule(READ, "", "endpoints services")]),
        cluster_role("system:persistent-volume-provisioner", [
            rule("create delete get list watch", "", "persistentvolumes"),
            rule("get list update watch", "", "persistentvolumeclaims"),
            rule(READ, "storage.k8s.io", "storageclasses"), rule("watch", "", "events"), EVENTS]),
        cluster_role("system:volume-scheduler", [
            rule("get list patch update watch", "", "persistentvolumes"),
            rule(READ, "storage.k8s.io", "storageclasses"),
            rule("get list patch update watch", "", "persistentvolumeclaims")]),
    ]


def cluster_roles() -> list[Obj]:
    """The bootstrap ClusterRoles, then the controllers' (``system:controller:*``)."""
    return [
        cluster_role("cluster-admin", [rule("*", "*", "*"), url("*", "*")]),
        cluster_role("admin", None, aggregate_from="admin"),
        cluster_role("edit", None, aggregate_to("admin"), aggregate_from="edit"),
        cluster_role("view", None, aggregate_to("edit"), aggregate_from="view"),
        *_aggregate_roles(),
        cluster_role("system:discovery", [url("get", "/api /api/* /apis /apis/* /healthz /livez /openapi "
                                                     "/openapi/* /readyz /version /version/")]),
        cluster_role("system:basic-user", [
            rule("create", "authorization.k8s.io", "selfsubjectaccessreviews selfsubjectrulesreviews"),
            rule("create", "authentication.k8s.io", "selfsubjectreviews")]),
        cluster_role("system:public-info-viewer", [url("get", "/healthz /livez /readyz /version /version/")]),
        cluster_role("system:monitoring", [url("get", "/healthz /healthz/* /livez /livez/* /metrics "
                                                      "/metrics/slis /readyz /readyz/*")]),
        cluster_role("system:service-account-issuer-discovery", [
            url("get", "/.well-known/openid-configuration /openid/v1/jwks")]),
        cluster_role("system:auth-delegator", [rule("create", "authentication.k8s.io", "tokenreviews"),
                                               rule("create", "authorization.k8s.io", "subjectaccessreviews")]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule("create", "certificates.k8s.io", "certificatesigningrequests/nodeclient")]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule("create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient")]),
        *(_approver(f"kubernetes.io/{signer}") for signer in
          ("kube-apiserver-client", "kube-apiserver-client-kubelet", "kubelet-serving", "legacy-unknown")),
        *_component_roles(),
        *(cluster_role(f"system:controller:{name}", rules) for name, rules in controller_rules().items()),
    ]


def controller_rules() -> dict[str, list[Obj]]:
    """The per-controller roles (``controller_policy.go``), for the controllers' own service accounts."""
    return {
        "attachdetach-controller": [rule("list watch", "", "persistentvolumeclaims persistentvolumes"),
                                    rule(READ, "", "nodes"), rule("patch update", "", "nodes/status"),
                                    rule("list watch", "", "pods"), EVENTS,
                                    rule("create delete get list watch", "storage.k8s.io", "volumeattachments"),
                                    rule(READ, "storage.k8s.io", "csidrivers"),
                                    rule(READ, "storage.k8s.io", "csinodes")],
        "certificate-controller": [rule("delete get list watch", "certificates.k8s.io", "certificatesigningrequests"),
                                   rule("update", "certificates.k8s.io",
                                        "certificatesigningrequests/approval certificatesigningrequests/status"),
                                   rule("approve", "certificates.k8s.io", "signers",
                                        names="kubernetes.io/kube-apiserver-client-kubelet"),
                                   rule("approve", "certificates.k8s.io", "signers",
                                        names="kubernetes.io/legacy-unknown"),
                                   rule("sign", "certificates.k8s.io", "signers",
                                        names="kubernetes.io/kube-apiserver-client kubernetes.io/kube-apiserver-client-"
                                              "kubelet kubernetes.io/kubelet-serving kubernetes.io/legacy-unknown"),
                                   rule("create", "authorization.k8s.io", "subjectaccessreviews"), EVENTS],
        "clusterrole-aggregation-controller": [rule("escalate get list patch update watch", GROUP, "clusterroles")],
        "cronjob-controller": [rule("get list update watch", "batch", "cronjobs"),
                               rule("create delete get list patch update watch", "batch", "jobs"),
                               rule("update", "batch", "cronjobs/status"),
                               rule("update", "batch", "cronjobs/finalizers"),
                               rule("delete list", "", "pods"), EVENTS],
        "daemon-set-controller": [rule("get list watch", "apps extensions", "daemonsets"),
                                  rule("update", "apps extensions", "daemonsets/status"),
                                  rule("update", "apps extensions", "daemonsets/finalizers"),
                                  rule(READ, "", "nodes"), rule("create delete list patch watch", "", "pods"),
                                  rule("create", "", "pods/binding"),
                                  rule("create delete get list patch update watch", "apps", "controllerrevisions"),
                                  EVENTS],
        "ephemeral-volume-controller": [rule(READ, "", "pods"), rule("update", "", "pods/finalizers"),
                                        rule("create get list watch", "", "persistentvolumeclaims"), EVENTS],
        "expand-controller": [rule("get list patch update watch", "", "persistentvolumes"),
                              rule("patch update", "", "persistentvolumeclaims/status"),
                              rule(READ, "", "persistentvolumeclaims"), rule(READ, "storage.k8s.io", "storageclasses"),
                              rule("get", "", "endpoints services"), rule("get", "", "secrets"), EVENTS],
        "deployment-controller": [rule("get list update watch", "apps extensions", "deployments"),
                                  rule("update", "apps extensions", "deployments/status"),
                                  rule("update", "apps extensions", "deployments/finalizers"),
                                  rule("create delete get list patch update watch", "apps extensions", "replicasets"),
                                  rule("get list update watch", "", "pods"), EVENTS],
        "disruption-controller": [rule(READ, "apps extensions", "deployments"),
                                  rule(READ, "apps extensions", "replicasets"),
                                  rule(READ, "", "replicationcontrollers"),
                                  rule(READ, "policy", "poddisruptionbudgets"), rule(READ, "apps", "statefulsets"),
                                  rule("update", "policy", "poddisruptionbudgets/status"),
                                  rule("get", "*", "*/scale"), rule("patch update", "", "pods/status"), EVENTS],
        "endpoint-controller": [rule(READ, "", "pods services"),
                                rule("create delete get list update", "", "endpoints"),
                                rule("create", "", "endpoints/restricted"), EVENTS],
        "endpointslice-controller": [rule(READ, "", "nodes pods services"),
                                     rule("update", "", "services/finalizers"),
                                     rule("create delete get list update", "discovery.k8s.io", "endpointslices"),
                                     EVENTS],
        "endpointslicemirroring-controller": [rule(READ, "", "endpoints services"),
                                              rule("update", "", "endpoints/finalizers"),
                                              rule("create delete get list update", "discovery.k8s.io",
                                                   "endpointslices"), EVENTS],
        "generic-garbage-collector": [rule("delete get list patch update watch", "*", "*"), EVENTS],
        "horizontal-pod-autoscaler": [rule(READ, "autoscaling", "horizontalpodautoscalers"),
                                      rule("update", "autoscaling", "horizontalpodautoscalers/status"),
                                      rule("get update", "*", "*/scale"), rule("list", "", "pods"),
                                      rule("list", "metrics.k8s.io", "pods"),
                                      rule("get list", "custom.metrics.k8s.io", "*"),
                                      rule("get list", "external.metrics.k8s.io", "*"), EVENTS],
        "job-controller": [rule("get list patch update watch", "batch", "jobs"),
                           rule("update", "batch", "jobs/status"), rule("update", "batch", "jobs/finalizers"),
                           rule("create delete list patch watch", "", "pods"), EVENTS],
        "legacy-service-account-token-cleaner": [
            rule("get", "", "configmaps", names="kube-apiserver-legacy-service-account-token-tracking"),
            rule("delete patch", "", "secrets"), rule("list", "", "pods")],
        "namespace-controller": [rule("delete get list watch", "", "namespaces"),
                                 rule("update", "", "namespaces/finalize namespaces/status"),
                                 rule("delete deletecollection get list", "*", "*")],
        "node-controller": [rule("delete get list patch update", "", "nodes"),
                            rule("patch update", "", "nodes/status"), rule("patch update", "", "pods/status"),
                            rule("delete list", "", "pods"), rule("get", "", "pods"), EVENTS],
        "persistent-volume-binder": [rule("create delete get list update watch", "", "persistentvolumes"),
                                     rule("update", "", "persistentvolumes/status"),
                                     rule("get list update watch", "", "persistentvolumeclaims"),
                                     rule("update", "", "persistentvolumeclaims/status"),
                                     rule("create delete get list watch", "", "pods"), rule("get list", "", "nodes"),
                                     rule("create delete get", "", "endpoints services"), rule("get", "", "secrets"),
                                     rule(READ, "storage.k8s.io", "storageclasses"), EVENTS],
        "pv-protection-controller": [rule("get list update watch", "", "persistentvolumes"), EVENTS],
        "pvc-protection-controller": [rule("get list update watch", "", "persistentvolumeclaims"),
                                      rule(READ, "", "pods"), EVENTS],
        "pod-garbage-collector": [rule("delete list watch", "", "pods"), rule("get list", "", "nodes"),
                                  rule("patch", "", "pods/status")],
        "replicaset-controller": [rule("get list update watch", "apps extensions", "replicasets"),
                                  rule("update", "apps extensions", "replicasets/status"),
                                  rule("update", "apps extensions", "replicasets/finalizers"),
                                  rule("create delete list patch watch", "", "pods"), EVENTS],
        "replication-controller": [rule("get list update watch", "", "replicationcontrollers"),
                                   rule("update", "", "replicationcontrollers/status"),
                                   rule("update", "", "replicationcontrollers/finalizers"),
                                   rule("create delete list patch watch", "", "pods"), EVENTS],
        "resourcequota-controller": [rule("list watch", "*", "*"), rule("update", "", "resourcequotas/status"),
                                     EVENTS],
        "root-ca-cert-publisher": [rule("create update", "", "configmaps"), EVENTS],
        "route-controller": [rule("list watch", "", "nodes"), rule("patch", "", "nodes/status"), EVENTS],
        "service-account-controller": [rule("create", "", "serviceaccounts"), EVENTS],
        "service-controller": [rule(READ, "", "services"), rule("patch update", "", "services/status"),
                               rule("list watch", "", "nodes"), EVENTS],
        "statefulset-controller": [rule("list watch", "", "pods"), rule(READ, "apps", "statefulsets"),
                                   rule("update", "apps", "statefulsets/status"),
                                   rule("update", "apps", "statefulsets/finalizers"),
                                   rule("create delete get patch update", "", "pods"),
                                   rule("create delete get list patch update watch", "apps", "controllerrevisions"),
                                   rule("create get", "", "persistentvolumeclaims"),
                                   rule("update delete", "", "persistentvolumeclaims"), EVENTS],
        "ttl-after-finished-controller": [rule("delete get list watch", "batch", "jobs"), EVENTS],
        "ttl-controller": [rule("list patch update watch", "", "nodes"), EVENTS],
        "validatingadmissionpolicy-status-controller": [
            rule(READ, "admissionregistration.k8s.io", "validatingadmissionpolicies"),
            rule("get patch update", "admissionregistration.k8s.io", "validatingadmissionpolicies/status")],
    }


def cluster_role_bindings() -> list[Obj]:
    controllers = [binding(f"system:controller:{name}", f"system:controller:{name}",
                           ("ServiceAccount", f"kube-system/{name}")) for name in controller_rules()]
    return [
        binding("cluster-admin", "cluster-admin", ("Group", "system:masters")),
        binding("system:basic-user", "system:basic-user", ("Group", "system:authenticated")),
        binding("system:discovery", "system:discovery", ("Group", "system:authenticated")),
        binding("system:public-info-viewer", "system:public-info-viewer", ("Group", "system:authenticated"),
                ("Group", "system:unauthenticated")),
        binding("system:kube-controller-manager", "system:kube-controller-manager",
                ("User", "system:kube-controller-manager")),
        binding("system:kube-dns", "system:kube-dns", ("ServiceAccount", "kube-system/kube-dns")),
        binding("system:kube-scheduler", "system:kube-scheduler", ("User", "system:kube-scheduler")),
        binding("system:volume-scheduler", "system:volume-scheduler", ("User", "system:kube-scheduler")),
        binding("system:monitoring", "system:monitoring", ("Group", "system:monitoring")),
        binding("system:node", "system:node"),
        binding("system:node-proxier", "system:node-proxier", ("User", "system:kube-proxy")),
        binding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
                ("Group", "system:serviceaccounts")),
        *controllers,
    ]


def namespaced_objects() -> list[Obj]:
    """Roles and RoleBindings in kube-system and kube-public (``NamespaceRoles`` and their bindings)."""
    def role(namespace: str, name: str, rules: list[Obj]) -> Obj:
        return {"apiVersion": f"{GROUP}/v1", "kind": "Role",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(BOOTSTRAP_LABELS),
                             "annotations": {AUTOUPDATE: "true"}}, "rules": rules}

    def role_binding(namespace: str, name: str, role_name: str, *subjects: Obj) -> Obj:
        return {"apiVersion": f"{GROUP}/v1", "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(BOOTSTRAP_LABELS),
                             "annotations": {AUTOUPDATE: "true"}},
                "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": role_name}, "subjects": list(subjects)}

    user = {"apiGroup": GROUP, "kind": "User"}
    return [
        role("kube-public", "system:controller:bootstrap-signer",
             [rule(READ, "", "configmaps"), rule("update", "", "configmaps", names="cluster-info"), EVENTS]),
        role("kube-system", "extension-apiserver-authentication-reader",
             [rule(READ, "", "configmaps", names="extension-apiserver-authentication")]),
        role("kube-system", "system::leader-locking-kube-controller-manager",
             [rule("watch", "", "configmaps"), rule("get update", "", "configmaps", names="kube-controller-manager")]),
        role("kube-system", "system::leader-locking-kube-scheduler",
             [rule("watch", "", "configmaps"), rule("get update", "", "configmaps", names="kube-scheduler")]),
        role("kube-system", "system:controller:bootstrap-signer", [rule(READ, "", "secrets")]),
        role("kube-system", "system:controller:cloud-provider", [rule("create get list watch", "", "configmaps")]),
        role("kube-system", "system:controller:token-cleaner",
             [rule("delete get list watch", "", "secrets"), EVENTS]),
        role_binding("kube-public", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     {"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}),
        role_binding("kube-system", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
                     {"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}),
        role_binding("kube-system", "system:controller:token-cleaner", "system:controller:token-cleaner",
                     {"kind": "ServiceAccount", "name": "token-cleaner", "namespace": "kube-system"}),
        role_binding("kube-system", "system::extension-apiserver-authentication-reader",
                     "extension-apiserver-authentication-reader", {**user, "name": "system:kube-controller-manager"},
                     {**user, "name": "system:kube-scheduler"}),
        role_binding("kube-system", "system::leader-locking-kube-controller-manager",
                     "system::leader-locking-kube-controller-manager",
                     {**user, "name": "system:kube-controller-manager"},
                     {"kind": "ServiceAccount", "name": "kube-controller-manager", "namespace": "kube-system"}),
        role_binding("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
                     {**user, "name": "system:kube-scheduler"},
                     {"kind": "ServiceAccount", "name": "kube-scheduler", "namespace": "kube-system"}),
    ]
