"""What the controllers share, kept apart so ``controllers/`` shows the controllers themselves.

    base            Controller: the workqueue and worker loop every controller runs
    expectations    creations/deletions a controller is waiting to see, so a burst of events acts once
    controllerref   adopting orphans and releasing dependents through controller ownerReferences
    podcontrol      creating and deleting a workload's pods, with the owner's events (RealPodControl)
    podutil         pod predicates (active, ready, available), deletion ranking, pods from templates
    taints          which tolerations match a node's NoExecute taints, and for how long
    history         ControllerRevisions of DaemonSets and StatefulSets
    statuswrite     a status write skipped when nothing changed
    endpointutil    pods behind a Service: selection, readiness, target ports
    slicewriter     keeping one controller's EndpointSlices of a Service at the desired ones
    discovery       the resources the apiserver serves (namespace controller, garbage collector)
    credentials     --use-service-account-credentials: each controller's own client
    healthz         the controller-manager's /healthz and /metrics
    daemonutil      where daemon pods run, RollingUpdate steps and DaemonSet status (pure)
    statefulutil    the statefulset controller's rules (pure); statefulpodcontrol its pod and claim writes
    replicacalculator, hpanormalize  the HPA's replica proposal and its normalization (pure)
    csrutil         reading CertificateSigningRequests, the kubelet client-certificate rule
"""
