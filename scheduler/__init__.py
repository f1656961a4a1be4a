"""kubelab's scheduler: binds pending pods to nodes through the apiserver, as kube-scheduler does.

Modules::

    framework      extension-point Protocols (per node and batch over the node table), Status codes, NodeInfo,
                   request accounting, normalisation
    plugins/       one module per plugin, each with its batch form, and the registry (NodeName,
                   NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit +
                   LeastAllocated, BalancedAllocation, VolumeRestrictions, PodTopologySpread, InterPodAffinity
                   with podaffinityterms/podaffinityindex, ImageLocality, DefaultPreemption)
    queue          active / backoff / unschedulable pods, cluster-event requeue with queueing hints
    cache          nodes with their bound and assumed pods, mirrored into the node table
    nodetable      node state in numpy arrays and the per-row trackers plugins keep (topology domains, ...)
    shapecache     per pod view, the results of node-static plugins (their cached batch forms)
    podcounts      placed pods matching a selector per node, kept as pods are assumed, bound and deleted
    config         KubeSchedulerConfiguration (profiles, plugin sets, weights, leader election)
    diagnosis      per-attempt verdicts and scores for ``kubelab explain`` and ``/debug/explain``
    runner         a profile's filter → score → pick (batch forms first, per node where a plugin has none),
                   preemption's PostFilter, queueing hints
    scheduler      the loop (informers, queue, runner, assume → bind, status and events)
    __main__       the process: flags, leader election through a Lease, the healthz/debug server
"""
