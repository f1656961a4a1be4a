"""kubelab's scheduler: binds pending pods to nodes through the apiserver, as kube-scheduler does.

Modules::

    framework   extension-point Protocols, Status codes, NodeInfo, request accounting, normalisation
    plugins/    one module per plugin and the registry (NodeName, NodeUnschedulable, TaintToleration,
                NodeAffinity, NodePorts, NodeResourcesFit + LeastAllocated, BalancedAllocation)
    scheduler   informers, the queue of pending pods, assume → bind, FailedScheduling

First part of issue 4. Not yet: numpy node arrays, percentageOfNodesToScore, KubeSchedulerConfiguration,
backoff queue with priorities, InterPodAffinity, VolumeRestrictions, ImageLocality, spreading, leader election,
explanations (`kubelab explain`), the benchmark.
"""
