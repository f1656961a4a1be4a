"""apiserver.autoregister: APIServices follow what discovery serves — a group that appears (a custom resource's)
gets a Local APIService on the next round, and loses it when it goes; built-in ones stay."""

from __future__ import annotations

import asyncio
import copy
from types import SimpleNamespace
from typing import Any

from apiserver.autoregister import AUTOMANAGED, AutoRegister


class FakeStore:
    """The slice of ``ResourceStore`` the controller uses, over a dict."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.cache = SimpleNamespace(list=lambda: [SimpleNamespace(obj=o) for _, o in sorted(self.objects.items())],
                                     get=lambda key: None)

    def etcd_key(self, namespace: str | None, name: str) -> bytes:
        return name.encode()

    async def create(self, obj: dict[str, Any], namespace: str | None) -> None:
        self.objects[obj["metadata"]["name"]] = copy.deepcopy(obj)

    async def delete(self, namespace: str | None, name: str, options: Any) -> None:
        del self.objects[name]

    async def guaranteed_update(self, namespace: str | None, name: str, update: Any, **kw: Any) -> None:
        self.objects[name] = update(copy.deepcopy(self.objects[name]))


def groups(*group_versions: tuple[str, str]) -> dict[str, Any]:
    return {"kind": "APIGroupList", "groups": [{"name": g, "versions": [{"version": v}]} for g, v in group_versions]}


def test_apiservices_follow_discovery() -> None:
    store = FakeStore()
    registry = SimpleNamespace(stores={("apiregistration.k8s.io", "apiservices"): store})
    served = [("apps", "v1")]
    controller = AutoRegister(registry, lambda: groups(*served), [("", "v1"), ("apps", "v1")])  # type: ignore[arg-type]

    async def rounds(n: int) -> None:
        for _ in range(n):
            await controller.sync()

    asyncio.run(rounds(2))
    assert sorted(store.objects) == ["v1.", "v1.apps"]
    assert store.objects["v1.apps"]["metadata"]["labels"] == {AUTOMANAGED: "onstart"}
    assert store.objects["v1.apps"]["status"]["conditions"][0]["reason"] == "Local"

    served.append(("stable.example.com", "v1"))  # a CRD's group is now served
    asyncio.run(rounds(2))
    crd = store.objects["v1.stable.example.com"]
    assert crd["metadata"]["labels"] == {AUTOMANAGED: "true"}
    assert (crd["spec"]["groupPriorityMinimum"], crd["spec"]["versionPriority"]) == (1000, 100)
    assert crd["status"]["conditions"][0]["status"] == "True"

    served.remove(("stable.example.com", "v1"))
    served.remove(("apps", "v1"))
    asyncio.run(rounds(1))
    assert sorted(store.objects) == ["v1.", "v1.apps"]  # the CRD's went; the built-in one stays (onstart)
