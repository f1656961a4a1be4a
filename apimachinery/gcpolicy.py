"""The cyclic garbage collector's settings for the cluster's processes.

A component holds every object it watches decoded (an informer's store: ~200 Python objects per pod) and decodes
each watch event into a fresh tree, so at CPython's default thresholds (700, 10, 10) a young collection runs every
few events and objects that live a few seconds, such as the version of a pod its next event replaces, survive
into the old generation; its full collections then walk the whole store again and again. The apiserver's request
bodies churn the same way. Collections that run rarer let such objects die young: with 10,000 pods on 1,000
hollow nodes every component used 23–42 % less CPU, and their RSS did not move (bench/README.md, bench/scale.py).
What these processes free is nearly all freed by reference counting; the collector is only for reference cycles.
"""

from __future__ import annotations

import gc

# Young collections every 50,000 allocations (a few hundred decoded objects), the middle generation every 20 of
# them, the old one as CPython decides (at most every 100 middle ones, and only once its pending objects are a
# quarter of it).
THRESHOLDS = (50_000, 20, 100)


def configure_gc() -> None:
    """Set the collector's thresholds for a long-running component (idempotent)."""
    gc.set_threshold(*THRESHOLDS)


def freeze_for_fork() -> None:
    """In a process that forks children without exec (the zygote): move everything allocated so far (its imports)
    out of the collector's reach, so no collection in a child walks it or writes to its pages (which would copy
    them: Python's documented way for fork servers, ``gc.freeze``). No collection first: it would cost
    ``kubelab up`` ~30 ms before the apiserver's fork to free what the imports left, a few hundred kilobytes."""
    configure_gc()
    gc.freeze()
