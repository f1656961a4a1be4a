"""What the apiserver serves, from discovery: the resources controllers that handle *any* kind work on.

The namespace controller empties a namespace of every namespaced resource it can list and delete; the garbage
collector monitors every resource it can list, watch and delete — custom resources included, which is why
both ask discovery (``/api/v1``, ``/apis``, each group's preferred version) rather than keep a static list.
"""

from __future__ import annotations

from kubeclient import Clientset, Resource


async def discover(clientset: Clientset, verbs: frozenset[str]) -> list[Resource]:
    """Every resource (no subresources) of every group's preferred version whose verbs include ``verbs``;
    each carries ``deletecollection`` in its subresources when served (what the namespace controller uses)."""
    rest = clientset.rest
    group_versions = [("", "v1")]
    groups = await rest.request("GET", "/apis")
    for group in groups.get("groups") or []:
        preferred = group.get("preferredVersion") or (group.get("versions") or [{}])[0]
        if preferred.get("version"):
            group_versions.append((group["name"], preferred["version"]))
    found = []
    for group, version in group_versions:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        listing = await rest.request("GET", path)
        for r in listing.get("resources") or []:
            served = set(r.get("verbs") or [])
            if "/" in r["name"] or not verbs <= served:
                continue
            found.append(Resource(group, version, r["name"], r.get("kind", ""), bool(r.get("namespaced")),
                                  frozenset({"deletecollection"} & served)))
    return found
