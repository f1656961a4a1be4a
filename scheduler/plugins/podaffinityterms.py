"""Pod (anti-)affinity terms parsed once: which pods (namespaces × labelSelector) over which topology key.

Shared by InterPodAffinity's per-node path (plugins/interpodaffinity.py) and its batch form over the node table
(plugins/podaffinityindex.py). A term with neither ``namespaces`` nor ``namespaceSelector`` means its owner's
namespace; ``namespaceSelector: {}`` means every namespace; a non-empty selector is matched against namespace
labels (``NamespaceLabels``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.labels import Selector, nothing, selector_from_label_selector

from ..framework import NamespaceLabels, Pod, builtin_namespace_labels

HARD_POD_AFFINITY_WEIGHT = 1


@dataclass(frozen=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm``: which pods (namespaces × selector) and over which topology key."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str
    weight: int = 1

    def matches(self, pod: Pod, namespace_labels: NamespaceLabels = builtin_namespace_labels) -> bool:
        meta = pod.get("metadata", {})
        namespace = meta.get("namespace", "default")
        if namespace not in self.namespaces and not self.namespace_selector.matches(namespace_labels(namespace)):
            return False
        return self.selector.matches(meta.get("labels") or {})


def parse_term(owner: Pod, term: dict[str, Any], weight: int = 1) -> AffinityTerm:
    namespaces = frozenset(term.get("namespaces") or ())
    ns_selector = term.get("namespaceSelector")
    if not namespaces and ns_selector is None:
        namespaces = frozenset((owner.get("metadata", {}).get("namespace", "default"),))
    return AffinityTerm(namespaces, nothing() if ns_selector is None else selector_from_label_selector(ns_selector),
                        selector_from_label_selector(term.get("labelSelector")), term.get("topologyKey", ""), weight)


def _affinity(pod: Pod, kind: str) -> dict[str, Any]:
    return (pod.get("spec", {}).get("affinity") or {}).get(kind) or {}


def required_terms(pod: Pod, kind: str) -> list[AffinityTerm]:
    """``kind`` is ``podAffinity`` or ``podAntiAffinity``."""
    return [parse_term(pod, t) for t in _affinity(pod, kind).get("requiredDuringSchedulingIgnoredDuringExecution")
            or []]


def preferred_terms(pod: Pod, kind: str) -> list[AffinityTerm]:
    return [parse_term(pod, w.get("podAffinityTerm") or {}, int(w.get("weight", 0)))
            for w in _affinity(pod, kind).get("preferredDuringSchedulingIgnoredDuringExecution") or []]


def matches_all(pod: Pod, terms: list[AffinityTerm], namespace_labels: NamespaceLabels) -> bool:
    return bool(terms) and all(t.matches(pod, namespace_labels) for t in terms)


def term_matches(term: AffinityTerm, namespace: str, labels: Mapping[str, str],
                 namespace_labels: NamespaceLabels) -> bool:
    """``AffinityTerm.matches`` for a namespace and labels instead of a pod."""
    if namespace not in term.namespaces and not term.namespace_selector.matches(namespace_labels(namespace)):
        return False
    return term.selector.matches(labels)
