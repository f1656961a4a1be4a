"""``metrics.k8s.io/v1beta1``: what metrics-server gives a cluster, served by the apiserver itself.

``collector`` scrapes the kubelets' ``/metrics/resource`` on request and turns two scrapes into rates; ``api``
serves NodeMetrics and PodMetrics (get and list, read-only) and their discovery documents.
"""
