"""Container runtimes behind one interface (``cri``): ``linux`` (Linux containers, the default where the kubelet
runs as root and the kernel allows it), ``process`` (host processes, the fallback) and ``docker``.

Nothing here imports the rest of the kubelet except its image catalogue (``kubelet.images``): the pod worker,
probes, exec and the server depend on ``cri``, never the other way round.
"""
