"""The in-tree plugins and the one registry from plugin name to factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .defaultpreemption import DefaultPreemption
from .imagelocality import ImageLocality
from .interpodaffinity import InterPodAffinity
from .nodeaffinity import NodeAffinity
from .nodename import NodeName
from .nodeports import NodePorts
from .noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from .nodeunschedulable import NodeUnschedulable
from .podtopologyspread import PodTopologySpread
from .tainttoleration import TaintToleration
from .volumebinding import VolumeBinding
from .volumerestrictions import VolumeRestrictions
from .volumezone import VolumeZone

REGISTRY: dict[str, Callable[[], Any]] = {
    "NodeName": NodeName,
    "NodeUnschedulable": NodeUnschedulable,
    "TaintToleration": TaintToleration,
    "NodeAffinity": NodeAffinity,
    "NodePorts": NodePorts,
    "NodeResourcesFit": NodeResourcesFit,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation,
    "VolumeRestrictions": VolumeRestrictions,
    "VolumeBinding": VolumeBinding,
    "VolumeZone": VolumeZone,
    "PodTopologySpread": PodTopologySpread,
    "InterPodAffinity": InterPodAffinity,
    "ImageLocality": ImageLocality,
    "DefaultPreemption": DefaultPreemption,
}

# kube-scheduler's default profile: filters in its order, scores with its default weights, preemption after.
DEFAULT_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                   "InterPodAffinity")
DEFAULT_SCORES = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2,
                  "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
DEFAULT_POST_FILTERS = ("DefaultPreemption",)
