"""kubelab's cluster DNS (``kubelab dns``): the Kubernetes DNS specification served from Services and
EndpointSlices, other names forwarded to the host's resolvers.

Why ``clusterdns`` and not ``dns``: dnspython's top-level package is ``dns``; a package of ours by that name would
shadow it in the whole virtualenv (the tests query with dnspython, and e.g. email-validator imports it).

Modules, each importing only those above it::

    records     the zone's names from Services and EndpointSlices, library-neutral (``ClusterRecords.lookup``)
    wire        the wire format (dnslib): parse a query, encode an answer or a failure
    forward     other names to the upstream resolvers, with a small cache
    server      UDP and TCP listeners: answer from ``records`` or ``forward``
    watch       the informers that keep ``records`` current
    kubedns     the ``kube-system/kube-dns`` Service and the EndpointSlice pointing at this server
    __main__    flags, health endpoints, wiring
"""
