"""controllers.serviceaccount over the FakeAPIServer: ``default`` in every Active namespace, back after a delete,
never in a Terminating namespace, AlreadyExists and NamespaceTerminating taken as done."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apimachinery import errors
from apimachinery.errors import Cause
from controllers.manager import enabled_controllers
from controllers.serviceaccount import ServiceAccountsController
from kubeclient import SERVICE_ACCOUNTS, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until


def namespace(name: str, phase: str = "Active", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "status": {"phase": phase}}


def accounts(fake: FakeAPIServer, ns: str | None = None) -> list[str]:
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in fake.objects(SERVICE_ACCOUNTS, ns)]


def controller(cs: Clientset, factory: InformerFactory) -> ServiceAccountsController:
    return ServiceAccountsController(cs, factory)


async def test_existing_and_new_namespaces_get_default() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.namespaces.create(namespace("old"))
    async with running(controller, fake):
        await until(lambda: accounts(fake) == ["old/default"])
        await cs.namespaces.create(namespace("new"))
        await until(lambda: accounts(fake, "new") == ["new/default"])
    created = [a for a in fake.actions if a.verb == "POST" and "serviceaccounts" in a.path]
    assert len(created) == 2


async def test_deleted_default_comes_back_and_others_do_not() -> None:
    async with running(controller) as (fake, cs):
        await cs.namespaces.create(namespace("a"))
        await until(lambda: accounts(fake) == ["a/default"])
        first = fake.objects(SERVICE_ACCOUNTS, "a")[0]["metadata"]["uid"]
        await cs.service_accounts.create({"metadata": {"name": "builder"}}, "a")
        await cs.service_accounts.delete("default", "a")
        await until(lambda: accounts(fake) == ["a/builder", "a/default"])
        assert fake.objects(SERVICE_ACCOUNTS, "a")[1]["metadata"]["uid"] != first
        await cs.service_accounts.delete("builder", "a")
        await asyncio.sleep(0.2)
        assert accounts(fake) == ["a/default"]


async def test_terminating_namespace_is_left_alone() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.namespaces.create(namespace("gone", "Terminating", deletionTimestamp="2024-05-01T12:00:00Z"))
    await cs.namespaces.create(namespace("live"))
    async with running(controller, fake):
        await until(lambda: accounts(fake) == ["live/default"])
        await asyncio.sleep(0.1)
    assert accounts(fake) == ["live/default"]


async def test_already_exists_and_namespace_terminating_are_done() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    sac = controller(cs, InformerFactory(cs))
    ns = await cs.namespaces.create(namespace("a"))
    sac.ns_informer.indexer.add(ns)  # a cache that has seen the namespace but not its account
    await cs.service_accounts.create({"metadata": {"name": "default"}}, "a")
    await sac.sync("missing")  # a namespace the cache does not hold: nothing to do
    await sac.sync("a")  # AlreadyExists: the cache was behind
    terminating = errors.Forbidden('serviceaccounts "default" is forbidden: unable to create new content in '
                                   "namespace a because it is being terminated",
                                   causes=[Cause("NamespaceTerminating", "namespace a is being terminated",
                                                 "metadata.namespace")])
    await cs.service_accounts.delete("default", "a")
    fake.fail_next(terminating, verb="POST")
    await sac.sync("a")
    fake.fail_next(errors.Forbidden("no"), verb="POST")
    with pytest.raises(errors.Forbidden):  # any other refusal is retried by the worker loop
        await sac.sync("a")
    await sac.sync("a")
    assert accounts(fake) == ["a/default"]


def test_enabled_by_default_under_kubes_names() -> None:
    assert "serviceaccount-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["serviceaccount"]) == ["serviceaccount-controller"]
    assert "serviceaccount-controller" not in enabled_controllers(["*", "-serviceaccount"])
