"""kubelab's controller-manager: Kubernetes' core controllers as one process (``python -m controllers``).

Every controller has the same shape (``controllers.base``): informer handlers compute a key, note
expectations and enqueue it; ``async def sync(key)`` re-reads the informer caches, acts through the API and
is idempotent; failures are retried by the worker loop with per-key exponential backoff.  Controllers never
talk to each other: each one's only inputs are the shared informers, its only outputs API writes.

Modules::

    base            Controller: the workqueue and worker loop every controller runs
    expectations    creations/deletions a controller is waiting to see, so a burst of events acts once
    podutil         pod predicates (active, ready, available), deletion ranking, pods from templates
    taints          which tolerations match a node's NoExecute taints, and for how long
    controllerref   adopting orphans and releasing dependents through controller ownerReferences
    replicaset      apps/v1 ReplicaSets; replication adapts it to core/v1 ReplicationControllers
    deployment/     rolling and recreate rollouts between ReplicaSets
    nodelifecycle   node heartbeats (Leases, status) → Ready=Unknown, NoExecute/NoSchedule taints
    tainteviction   deleting pods from nodes with NoExecute taints they do not tolerate (in time)
    podgc           pods of deleted nodes, unscheduled terminating pods, too many terminated pods
    garbagecollector ownerReferences: Background, Foreground and Orphan deletion
    namespace       emptying and finalizing a deleted namespace
    serviceaccount  a ``default`` ServiceAccount in every active namespace, re-created when deleted
    endpointutil    pods behind a Service: selection, readiness, target ports; the handlers both share
    endpoints       core/v1 Endpoints of every Service with a selector
    slicewriter     keeping one controller's EndpointSlices of a Service at the desired ones
    endpointslice   discovery.k8s.io/v1 EndpointSlices of every Service with a selector
    daemonutil      where daemon pods run, the pods themselves, RollingUpdate steps and DaemonSet status (pure)
    daemonset       one daemon pod per eligible node, RollingUpdate and OnDelete
    endpointslicemirroring  EndpointSlices mirroring the hand-written Endpoints of Services without selector
    disruption              each PodDisruptionBudget's status: expected, healthy and allowed disruptions
    replicacalculator       the HPA's replica proposal from pods, requests and resource metrics (pure)
    hpanormalize            the HPA's stabilization windows, rate policies and min/max limits (pure)
    horizontal              HorizontalPodAutoscalers: scaling Deployments, ReplicaSets, RCs on pod metrics
    manager         the controller registry, leader election, the process lifecycle
    cli, healthz    kube-controller-manager's flags and ``main``; the /healthz endpoint
"""
