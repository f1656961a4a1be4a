"""kubelab's controller-manager: Kubernetes' core controllers as one process (``python -m controllers``).

Every controller has the same shape (``controllers.support.base``): informer handlers compute a key, note
expectations and enqueue it; ``async def sync(key)`` re-reads the informer caches, acts through the API and
is idempotent; failures are retried by the worker loop with per-key exponential backoff.  Controllers never
talk to each other: each one's only inputs are the shared informers, its only outputs API writes.

The controllers, one module each under kube's names (``deployment/`` a package of its own); what they share,
and the pure rules a controller keeps apart to be read and tested without a cluster, are ``support/``::

    replicaset      apps/v1 ReplicaSets; replication adapts it to core/v1 ReplicationControllers
    deployment/     rolling and recreate rollouts between ReplicaSets
    daemonset       one daemon pod per eligible node, RollingUpdate and OnDelete
    statefulset     pods <set>-<ordinal> with stable names and claims, ordered or parallel, rolling updates
    job, cronjob    Jobs run to completion; a Job at each scheduled time
    ttlafterfinished finished Jobs deleted once their TTL has run out
    horizontal      HorizontalPodAutoscalers: scaling Deployments, ReplicaSets, RCs on pod metrics
    disruption      each PodDisruptionBudget's status: expected, healthy and allowed disruptions
    nodelifecycle   node heartbeats (Leases, status) → Ready=Unknown, NoExecute/NoSchedule taints
    nodeipam        a pod CIDR for every Node (--allocate-node-cidrs)
    tainteviction   deleting pods from nodes with NoExecute taints they do not tolerate (in time)
    podgc           pods of deleted nodes, unscheduled terminating pods, too many terminated pods
    garbagecollector ownerReferences: Background, Foreground and Orphan deletion
    namespace       emptying and finalizing a deleted namespace
    resourcequota   each ResourceQuota's status.used
    serviceaccount  a ``default`` ServiceAccount in every active namespace, re-created when deleted
    rootcacertpublisher  kube-root-ca.crt in every namespace
    endpoints       core/v1 Endpoints of every Service with a selector
    endpointslice   discovery.k8s.io/v1 EndpointSlices of every Service with a selector
    endpointslicemirroring  EndpointSlices mirroring the hand-written Endpoints of Services without selector
    persistentvolume, volumeexpand, volumeprotection  the PV binder, the expander, pvc/pv protection
    csrsigning, csrapproving  issuing approved CSRs with the cluster CA; approving kubelets' client CSRs
    bootstrapsigner, tokencleaner  signing cluster-info; deleting expired bootstrap tokens
    clusterroleaggregation  aggregated ClusterRoles' rules

    manager         the controller registry, leader election, the process lifecycle
    cli             kube-controller-manager's flags and ``main``

    support/        base (the Controller: workqueue and worker loop), expectations, controllerref, podcontrol,
                    podutil, taints, history, statuswrite, endpointutil, slicewriter, discovery, credentials
                    (--use-service-account-credentials), healthz, and the pure rules of daemonset
                    (daemonutil), statefulset (statefulutil, statefulpodcontrol), the HPA (replicacalculator,
                    hpanormalize) and the CSR controllers (csrutil)
"""
