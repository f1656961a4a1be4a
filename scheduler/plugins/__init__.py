"""The in-tree plugins and the one registry from plugin name to factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .nodeaffinity import NodeAffinity
from .nodename import NodeName
from .nodeports import NodePorts
from .noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from .nodeunschedulable import NodeUnschedulable
from .tainttoleration import TaintToleration

REGISTRY: dict[str, Callable[[], Any]] = {
    "NodeName": NodeName,
    "NodeUnschedulable": NodeUnschedulable,
    "TaintToleration": TaintToleration,
    "NodeAffinity": NodeAffinity,
    "NodePorts": NodePorts,
    "NodeResourcesFit": NodeResourcesFit,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation,
}

# kube-scheduler's default profile: filters in order, scores with weights.
DEFAULT_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit")
DEFAULT_SCORES = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                  "NodeResourcesBalancedAllocation": 1}
