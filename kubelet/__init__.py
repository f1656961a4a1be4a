"""kubelab's kubelet: one process per node that turns the pods bound to it into real OS processes.

Modules::

    node        Node registration (retried until the apiserver answers), the kube-node-lease heartbeat,
                node status
    kubelet     the pod informer (spec.nodeName=<node>), one worker per pod, housekeeping of forgotten pods
    pod_worker  the per-pod sync loop: volumes, init containers, start, restart (CrashLoopBackOff), probes,
                hooks, terminate, report status
    status      pure functions: container states → phase, conditions, containerStatuses
    env         a container's environment (env, envFrom, the downward API) and $(VAR) expansion
    volumes     emptyDir, hostPath, configMap and secret volumes as host directories
    sources     ConfigMaps and Secrets as env and volumes read them: one set of rules for both kinds
    probes      liveness, readiness and startup probes (exec, httpGet, tcpSocket) and lifecycle hooks
    images      the node's image store: pull policy, Pulling/Pulled events, ImagePullBackOff, status.images
    backoff     the crash-loop back-off of one container (restart at once, then 10 s doubling to 5 min)
    logs        which lines of a container's log a request gets (since, tail, limitBytes)
    runtime/    the container runtimes, below everything else here:
        cri       the interface the rest of the kubelet sees (Runtime, Container, ContainerMeta, ExecTarget)
        process   the default: a container is a process group under a shim, found again after a restart
        shim      the container's parent process (containerd-shim's role), standard library only
        docker    ``--runtime docker``: real containers through a Docker engine's API
    exec        kubectl exec over the v5/v4 channel.k8s.io websocket, with a pty for -t
    server      the kubelet API the apiserver proxies `kubectl logs` and `kubectl exec` to
    hollow      simulated nodes for scale benchmarks (``--hollow``, as kubemark): no processes
"""
