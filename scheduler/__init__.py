"""kubelab's scheduler: binds pending pods to nodes through the apiserver, as kube-scheduler does.

Modules::

    framework      extension-point Protocols, Status codes, NodeInfo, request accounting, normalisation
    plugins/       one module per plugin and the registry (NodeName, NodeUnschedulable, TaintToleration,
                   NodeAffinity, NodePorts, NodeResourcesFit + LeastAllocated, BalancedAllocation,
                   VolumeRestrictions, PodTopologySpread, InterPodAffinity, ImageLocality, DefaultPreemption)
    queue          active / backoff / unschedulable pods, cluster-event requeue with queueing hints
    cache          nodes with their bound and assumed pods, mirrored into the node table
    nodetable      node state in numpy arrays, vectorised resource maths, per-pod-view result cache
    affinityindex  placed pods by labels and by affinity terms, InterPodAffinity over all nodes at once
    config         KubeSchedulerConfiguration (profiles, plugin sets, weights, leader election)
    diagnosis      per-attempt verdicts and scores for ``kubelab explain`` and ``/debug/explain``
    scheduler      the runner (filter → score → pick, preemption) and the loop (informers, assume → bind)
    __main__       the process: flags, leader election through a Lease, the healthz/debug server
"""
