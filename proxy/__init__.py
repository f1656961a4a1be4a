"""kube-proxy (``kubelab proxy``): Services made real with nftables or iptables rules, as kube-proxy's modes do.

One proxy per cluster, not per node: kubelab's nodes share one cluster network namespace (``kubelet/network.py``),
so one ruleset there serves every node — ClusterIPs, and NodePorts on every node's InternalIP. The proxy runs in
the host's namespace (its API client and ``/healthz`` on 127.0.0.1) and applies its rules inside the cluster's
with ``nsenter --net=/run/netns/<name> nft -f -``.

    services       Service + EndpointSlice informers → one ``ServicePort`` per (Service, port): ClusterIPs, the
                   NodePort, sessionAffinity, the ready endpoints (``model``)
    nftables       table ``ip kube-proxy``: verdict maps ``service-ips`` (ClusterIP . proto . port) and
                   ``service-nodeports`` (proto . port, for daddr in ``nodeport-ips``), a ``service-*`` chain per
                   Service port load-balancing with ``numgen random mod N`` over ``endpoint-*`` chains that DNAT;
                   hairpin and off-cluster sources marked 0x4000 and masqueraded; ClientIP affinity through a
                   per-endpoint dynamic set with a timeout (``nftables``)
    sync           only changed Service ports are re-rendered, all changes in one ``nft -f`` transaction; the
                   first sync replaces the table atomically (a restarted proxy leaves the old rules working until
                   then); syncs are at least ``--min-sync-period`` apart and at most ``--sync-period`` (``proxier``)

    iptables       ``--proxy-mode iptables``: kube-proxy's KUBE-SERVICES / KUBE-SVC-* / KUBE-SEP-* chains with
                   ``-m statistic`` load balancing, applied with ``iptables-restore --noflush``; only changed
                   Service ports' chains rewritten (``iptables``)
    mode           ``--proxy-mode auto`` (the default): nftables where nft works in the cluster network, else
                   iptables; userspace without a cluster network; the chosen mode removes the other's leftovers

``--proxy-mode userspace`` (``userspace``) is for the process runtime, which has no pod network: the proxy relays
each ClusterIP's connections itself on the ClusterIP's loopback stand-in (``apimachinery.serviceip``).

nftables first, iptables where nft does not work: nftables is kube-proxy's newer mode, one atomic transaction per
sync with sets and verdict maps instead of a linear chain per packet, and nft is what Debian installs (iptables
there is iptables-nft anyway).
"""
