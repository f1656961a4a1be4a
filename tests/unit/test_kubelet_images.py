"""The node's image store: Docker's reference normalisation, pull policies, pull events, ErrImagePull back-off."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from kubelet.images import ImageStore, default_pull_policy, lookup, normalize, parse_reference


@pytest.mark.parametrize(("image", "normalized"), [
    ("busybox", "docker.io/library/busybox:latest"),
    ("busybox:1.36", "docker.io/library/busybox:1.36"),
    ("docker.io/busybox", "docker.io/library/busybox:latest"),
    ("index.docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36"),
    ("bitnami/nginx", "docker.io/bitnami/nginx:latest"),
    ("localhost:5000/team/app:v1", "localhost:5000/team/app:v1"),
    ("busybox@sha256:abc", "docker.io/library/busybox@sha256:abc"),
])
def test_normalize_as_docker(image: str, normalized: str) -> None:
    assert normalize(image) == normalized


def test_catalog_entry_under_any_tag_and_registry() -> None:
    assert parse_reference("registry.k8s.io/e2e-test-images/busybox:1.29-4").catalog_key == "busybox"
    assert lookup("python:3.12-slim") is not None and lookup("python:3.12-slim") == lookup("python")
    assert lookup("no-such-image:1.0") is None


def test_default_pull_policy() -> None:
    assert default_pull_policy("busybox") == "Always"
    assert default_pull_policy("busybox:latest") == "Always"
    assert default_pull_policy("busybox:1.36") == "IfNotPresent"
    assert default_pull_policy("busybox@sha256:abc") == "IfNotPresent"


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []
        self.containers: set[str | None] = set()  # the containers the events were about

    def __call__(self, pod: dict[str, Any], kind: str, reason: str, message: str,
                 container: str | None = None) -> None:
        self.items.append((kind, reason, message))
        self.containers.add(container)

    def take(self) -> list[tuple[str, str, str]]:
        items, self.items = self.items, []
        return items


POD = {"metadata": {"uid": "u1", "name": "p", "namespace": "default"}}


def ensure(store: ImageStore, events: Events, image: str, policy: str | None = None, now: float | None = None) -> Any:
    container = {"name": "c", "image": image, **({"imagePullPolicy": policy} if policy else {})}
    return asyncio.run(store.ensure(POD, container, events, now))


def test_first_use_pulls_then_already_present(tmp_path: Path) -> None:
    store, events = ImageStore(tmp_path / "images"), Events()
    assert ensure(store, events, "busybox:1.36") is None
    (pulling, pulled) = events.take()
    assert pulling == ("Normal", "Pulling", 'Pulling image "busybox:1.36"')
    assert pulled[:2] == ("Normal", "Pulled")
    assert re.fullmatch(r'Successfully pulled image "busybox:1\.36" in \S+ \(\S+ including waiting\)\. '
                        r"Image size: 4261574 bytes\.", pulled[2])
    assert ensure(store, events, "busybox:1.36") is None
    assert events.take() == [("Normal", "Pulled", 'Container image "busybox:1.36" already present on machine')]
    # another tag of the same image is another name to pull; Always pulls every time
    assert ensure(store, events, "docker.io/library/busybox:1.36", "Always") is None
    assert [e[1] for e in events.take()] == ["Pulling", "Pulled"]
    assert events.containers == {"c"}  # image events name their container (kubectl describe's "spec.containers{c}")


def test_status_images_lists_the_pulled_names_and_sizes(tmp_path: Path) -> None:
    store, events = ImageStore(tmp_path / "images"), Events()
    assert store.images() == []
    ensure(store, events, "busybox")
    ensure(store, events, "busybox:1.36")
    ensure(store, events, "python:3.12")
    images = store.images()
    assert [i["sizeBytes"] for i in images] == sorted((i["sizeBytes"] for i in images), reverse=True)
    busybox = next(i for i in images if "docker.io/library/busybox:latest" in i["names"])
    assert busybox["sizeBytes"] == 4_261_574
    assert "docker.io/library/busybox:1.36" in busybox["names"]
    assert any(name.startswith("docker.io/library/busybox@sha256:") for name in busybox["names"])
    assert store.changed.is_set()
    # a new store over the same directory (a restarted kubelet) still has them
    assert ImageStore(tmp_path / "images").present("busybox")


def test_never_pull_policy(tmp_path: Path) -> None:
    store, events = ImageStore(tmp_path / "images"), Events()
    failure = ensure(store, events, "busybox:1.36", "Never")
    assert failure.reason == "ErrImageNeverPull"
    assert failure.message == 'Container image "busybox:1.36" is not present with pull policy of Never'
    ensure(store, events, "busybox:1.36")
    events.take()
    assert ensure(store, events, "busybox:1.36", "Never") is None


def test_unknown_image_backs_off(tmp_path: Path) -> None:
    store, events = ImageStore(tmp_path / "images", backoff_base=10, backoff_max=15), Events()
    first = ensure(store, events, "no-such-image:1.0", now=100.0)
    assert first.reason == "ErrImagePull" and first.retry_in <= 1.0
    assert first.message.startswith('Failed to pull image "no-such-image:1.0": ')
    assert [e[1:] for e in events.take()][1:] == [("Failed", first.message), ("Failed", "Error: ErrImagePull")]
    backing_off = ensure(store, events, "no-such-image:1.0", now=101.0)
    assert (backing_off.reason, backing_off.retry_in) == ("ImagePullBackOff", 9.0)
    assert backing_off.message == 'Back-off pulling image "no-such-image:1.0"'
    assert events.take() == [("Normal", "BackOff", 'Back-off pulling image "no-such-image:1.0"'),
                             ("Warning", "Failed", "Error: ImagePullBackOff")]
    assert ensure(store, events, "no-such-image:1.0", now=110.0).reason == "ErrImagePull"
    assert ensure(store, events, "no-such-image:1.0", now=111.0).retry_in == 14.0  # doubled, capped at 15
    assert store.images() == []
