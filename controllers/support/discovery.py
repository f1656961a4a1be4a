"""What the apiserver serves, from discovery: the resources controllers that handle *any* kind work on.

The namespace controller empties a namespace of every namespaced resource it can list and delete; the garbage
collector monitors every resource it can list, watch and delete — custom resources included, which is why
both ask discovery (``/api/v1``, ``/apis``, each group's preferred version) rather than keep a static list.
"""

from __future__ import annotations

from apimachinery.errors import NotFound
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


async def scalable_resource(clientset: Clientset, api_version: str, kind: str) -> Resource | None:
    """The resource of ``kind`` in ``api_version`` when it serves ``/scale`` (what the RESTMapper and the scale
    client resolve for an HPA's scaleTargetRef, custom resources included), else None."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        listing = await clientset.rest.request("GET", path)
    except NotFound:
        return None
    names = {r["name"] for r in listing.get("resources") or []}
    for r in listing.get("resources") or []:
        if r.get("kind") == kind and "/" not in r["name"] and f"{r['name']}/scale" in names:
            return Resource(group, version, r["name"], kind, bool(r.get("namespaced")), frozenset({"scale"}))
    return None
