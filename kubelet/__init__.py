"""kubelab's kubelet: one process per node that turns the pods bound to it into real OS processes.

Modules::

    node        Node registration, the kube-node-lease heartbeat, node status
    kubelet     the pod informer (spec.nodeName=<node>) and one worker per pod
    pod_worker  the per-pod sync loop: start, restart (CrashLoopBackOff), terminate, report status
    status      pure functions: container states → phase, conditions, containerStatuses
    runtime     the process runtime: a container is a process group with a CRI-format log file
    server      the kubelet API the apiserver proxies `kubectl logs` to

Not yet (issue 6): probes, init containers, exec, the image store with pull events, adopting running
containers after a kubelet restart, hollow nodes.
"""
