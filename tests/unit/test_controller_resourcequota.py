"""controllers.resourcequota over the FakeAPIServer: status.hard copied from the spec, used counted from what
exists (scopes, terminal pods), usage given back when a pod goes, and status writes not undone by recounts."""

from __future__ import annotations

from typing import Any

from controllers.manager import enabled_controllers
from controllers.resourcequota import ResourceQuotaController
from kubeclient import RESOURCE_QUOTAS, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until


def make(cs: Clientset, factory: InformerFactory) -> ResourceQuotaController:
    return ResourceQuotaController(cs, factory, workers=1)


def pod(name: str, cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "b",
                                                                  "resources": resources}], **spec}}


def used(fake: FakeAPIServer, name: str = "q") -> dict[str, str] | None:
    found = [o for o in fake.objects(RESOURCE_QUOTAS, "default") if o["metadata"]["name"] == name]
    return (found[0].get("status") or {}).get("used") if found else None


def test_it_is_on_by_default_with_its_alias() -> None:
    assert "resourcequota-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["resourcequota"]) == ["resourcequota-controller"]


async def test_used_follows_the_pods_and_their_deletion() -> None:
    async with running(make) as (fake, cs):
        await cs.pods.create(pod("a", "100m"), "default")
        await cs.pods.create(pod("b", "250m"), "default")
        await cs.pods.create(pod("other"), "elsewhere")
        await cs.resource(RESOURCE_QUOTAS).create(
            {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5", "requests.cpu": "2", "secrets": "1"}}},
            "default")
        await until(lambda: used(fake) == {"pods": "2", "requests.cpu": "350m", "secrets": "0"})
        quota = next(o for o in fake.objects(RESOURCE_QUOTAS, "default"))
        assert quota["status"]["hard"] == {"pods": "5", "requests.cpu": "2", "secrets": "1"}
        await cs.pods.delete("a", "default")
        await until(lambda: used(fake) == {"pods": "1", "requests.cpu": "250m", "secrets": "0"})


async def test_scoped_quota_counts_only_the_pods_it_covers() -> None:
    async with running(make) as (fake, cs):
        await cs.pods.create(pod("idle"), "default")
        await cs.pods.create(pod("busy", "1"), "default")
        await cs.pods.create(pod("batch", activeDeadlineSeconds=10), "default")
        await cs.resource(RESOURCE_QUOTAS).create(
            {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "9"}, "scopes": ["BestEffort", "NotTerminating"]}},
            "default")
        await until(lambda: used(fake) == {"pods": "1"})


async def test_a_status_write_is_not_recounted() -> None:
    async with running(make) as (fake, cs):
        client = cs.resource(RESOURCE_QUOTAS)
        await client.create({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5"}}}, "default")
        await until(lambda: used(fake) == {"pods": "0"})
        quota = next(o for o in fake.objects(RESOURCE_QUOTAS, "default"))
        quota["status"]["used"] = {"pods": "1"}  # what admission charges for a pod the caches may not have yet
        await client.update_status(quota)
        # One worker, keys in order: once a quota added after the write is synced, a recount of q would be done.
        await client.create({"metadata": {"name": "r"}, "spec": {"hard": {"pods": "5"}}}, "default")
        await until(lambda: used(fake, "r") == {"pods": "0"})
        assert used(fake) == {"pods": "1"}
        quota = next(o for o in fake.objects(RESOURCE_QUOTAS, "default") if o["metadata"]["name"] == "q")
        quota["spec"]["hard"] = {"pods": "6"}  # a spec change is recounted
        await client.update(quota)
        await until(lambda: used(fake) == {"pods": "0"})
