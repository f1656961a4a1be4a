"""Container runtimes behind one interface (``cri``): ``process`` (the default) and ``docker``.

Nothing here imports the rest of the kubelet except its image catalogue (``kubelet.images``): the pod worker,
probes, exec and the server depend on ``cri``, never the other way round.
"""
