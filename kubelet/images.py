"""The node's image store: which images exist, pulling one onto the node, and the pull policy with its back-off.

A process runtime has no registry to pull from, so ``CATALOG`` plays the registry: it describes each image
(its ENTRYPOINT and CMD as its Dockerfile sets them, its size, what it runs) under **any tag**. Pulling is real
work on the node — the image's manifest is written under ``<root-dir>/images/`` — and its effects are those of
a real pull: ``Pulling``/``Pulled`` events with the measured time, the image in the Node's ``status.images``,
``Container image "busybox" already present on machine`` afterwards. What the images run:

    busybox, alpine  the host's POSIX ``sh`` and usual utilities (no entrypoint, CMD ``sh``)
    python           this machine's Python interpreter (CMD ``python3``)
    nginx            a stand-in, not nginx: a static file server (``nginx_standin.py``, Python's ``http.server``)
                     on ``<address>:<port>``: the container's first TCP containerPort, else 80 as nginx. The
                     kubelet puts the address and port in the image's default command (``listen_command``):
                     ``0.0.0.0`` in a pod's own network namespace (linux runtime on a pod network), as nginx,
                     else the pod's IP, as pods on the node's network cannot all bind ``0.0.0.0:80``; a user
                     that may not bind ports below 1024 gets a free port instead, which the container's log tells

References are normalised as Docker does (``busybox`` == ``docker.io/library/busybox:latest``). An image not in
the catalog fails to pull: ``ErrImagePull``, then ``ImagePullBackOff`` while the back-off (per pod and image,
doubling to 5 min, as kubelet's ``imageBackOff``) runs; ``imagePullPolicy: Never`` with the image absent is
``ErrImageNeverPull``. Pulls are serialised per node (kubelet's default ``serializeImagePulls``), which is why
the message tells the time "including waiting".
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

DEFAULT_DOMAIN = "docker.io"


class Recorder(Protocol):
    """Kubelet.event: an event about ``pod``, or about one of its containers when ``container`` names it."""

    def __call__(self, pod: dict[str, Any], kind: str, reason: str, message: str,
                 container: str | None = None) -> None: ...


@dataclass(frozen=True)
class ImageConfig:
    """What an image runs (its Dockerfile's ENTRYPOINT and CMD) and how big it is."""

    entrypoint: list[str]
    cmd: list[str]
    size: int
    description: str
    listens: bool = False  # its default command serves HTTP: the kubelet appends ``<podIP> <port>`` to it
    env: tuple[str, ...] = ()  # NAME=value, from a loaded image's config
    working_dir: str = ""
    user: str = ""  # uid[:gid] or a name in the image's /etc/passwd
    rootfs: str = ""  # a loaded image's tree (``imagearchive``); built-in images have none of their own


CATALOG: dict[str, ImageConfig] = {
    "busybox": ImageConfig([], ["sh"], 4_261_574, "POSIX sh and the usual utilities (the host's)"),
    "alpine": ImageConfig([], ["sh"], 7_797_760, "POSIX sh and the usual utilities (the host's)"),
    "python": ImageConfig([], ["python3"], 49_523_731, "the Python interpreter (this machine's)"),
    "nginx": ImageConfig([], [sys.executable, str(Path(__file__).with_name("nginx_standin.py"))], 72_099_410,
                         "a stand-in: a static file server on <podIP>:<containerPort> (80)", listens=True),
}
DEFAULT_LISTEN_PORT = 80  # nginx's ``listen 80``


def command_line(container: dict[str, Any], config: ImageConfig | None = None) -> list[str]:
    """Kubernetes' rule: ``command`` overrides the image's ENTRYPOINT, ``args`` its CMD (``config``: the image's,
    a catalog image's by default)."""
    config = config or lookup(container.get("image", ""))
    entrypoint, cmd = (config.entrypoint, config.cmd) if config else ([], [])
    command = list(container.get("command") or []) or list(entrypoint)
    args = list(container.get("args") or []) if container.get("args") or container.get("command") else list(cmd)
    return command + args


def listen_command(container: dict[str, Any], address: str) -> dict[str, Any]:
    """The container with its image's default command told where to listen (``<address> <port>``: the pod's IP, or
    ``0.0.0.0`` in a network namespace of its own), when the image serves (``listens``) and the pod spec sets
    neither ``command`` nor ``args``; any other container as it is."""
    config = lookup(container.get("image", ""))
    if config is None or not config.listens or container.get("command") or container.get("args"):
        return container
    tcp = [p["containerPort"] for p in container.get("ports") or []
           if p.get("containerPort") and p.get("protocol", "TCP") == "TCP"]
    port = tcp[0] if tcp else DEFAULT_LISTEN_PORT
    return {**container, "command": [*config.entrypoint, *config.cmd, address, str(port)]}


@dataclass(frozen=True)
class Reference:
    """A parsed image reference: ``domain/path[:tag][@digest]``."""

    domain: str
    path: str
    tag: str
    digest: str

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}"

    @property
    def name(self) -> str:
        """The normalised name: ``docker.io/library/busybox:latest`` (the digest form when one was given)."""
        if self.digest:
            return f"{self.repository}{':' + self.tag if self.tag else ''}@{self.digest}"
        return f"{self.repository}:{self.tag or 'latest'}"

    @property
    def catalog_key(self) -> str:
        """The catalog entry this reference means: the repository's last component (``library/busybox`` and
        ``registry.k8s.io/e2e-test-images/busybox`` are both busybox)."""
        return self.path.rsplit("/", 1)[-1]


def parse_reference(image: str) -> Reference:
    """Docker's normalisation (``reference.ParseNormalizedNamed``): default registry ``docker.io``, ``library/``
    for official images, tag ``latest`` when neither tag nor digest is given."""
    name, _, digest = image.strip().partition("@")
    repository, tag = name, ""
    if name.rfind(":") > name.rfind("/"):
        repository, tag = name.rsplit(":", 1)
    first, slash, rest = repository.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        domain, path = DEFAULT_DOMAIN, repository
    else:
        domain, path = first, rest
    if domain == "index.docker.io":
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = "library/" + path
    return Reference(domain, path.lower(), tag, digest)


def normalize(image: str) -> str:
    return parse_reference(image).name


def default_pull_policy(image: str) -> str:
    """As the apiserver defaults it: ``Always`` for ``:latest`` or no tag (and no digest), else ``IfNotPresent``."""
    ref = parse_reference(image)
    return "Always" if not ref.digest and ref.tag in ("", "latest") else "IfNotPresent"


def lookup(image: str) -> ImageConfig | None:
    return CATALOG.get(parse_reference(image).catalog_key)


def digest_of(ref: Reference) -> str:
    """A stable content digest for the catalog entry (the same image under every tag has one digest)."""
    config = CATALOG[ref.catalog_key]
    body = json.dumps({"image": ref.catalog_key, "entrypoint": config.entrypoint, "cmd": config.cmd,
                       "size": config.size}, sort_keys=True)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


class PullError(Exception):
    """The image cannot be pulled (the runtime's error text follows ``Failed to pull image "x": ``)."""


@dataclass
class PullFailure:
    """Why a container cannot start yet: its waiting reason and message, and when to try again (seconds)."""

    reason: str  # ErrImagePull, ImagePullBackOff, ErrImageNeverPull
    message: str
    retry_in: float


@dataclass
class _BackOff:
    delay: float
    until: float


@dataclass
class ImageStore:
    """The images on this node (``<root>/images/<digest>.json``, one per image with every name it was pulled as)."""

    root: Path
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # set when an image was pulled (node status)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _backoff: dict[tuple[str, str], _BackOff] = field(default_factory=dict)
    _seen: int = 0  # the store directory's mtime when last looked at (``refresh``)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def _manifest(self, digest: str) -> Path:
        return self.root / f"{digest.replace(':', '-')}.json"

    def loaded(self, image: str) -> dict[str, Any] | None:
        """The manifest of an image imported under that name (``kubelab image load``), or ``None``."""
        name = normalize(image)
        for path in self.root.glob("sha256-*.json"):
            try:
                manifest = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if manifest.get("rootfs") and name in manifest["names"]:
                return dict(manifest)
        return None

    def config(self, image: str) -> ImageConfig | None:
        """What the image runs: a loaded image's config, else the catalog's."""
        manifest = self.loaded(image)
        if manifest is None:
            return lookup(image)
        return ImageConfig(list(manifest["entrypoint"]), list(manifest["cmd"]), int(manifest["size"]),
                           manifest.get("description", ""), env=tuple(manifest.get("env") or ()),
                           working_dir=manifest.get("workingDir", ""), user=manifest.get("user", ""),
                           rootfs=manifest["rootfs"])

    def refresh(self) -> None:
        """Notice images written by another process (``kubelab image load``): ``changed`` when the store's
        directory changed since last seen."""
        try:
            mtime = self.root.stat().st_mtime_ns
        except OSError:
            return
        if mtime != self._seen:
            if self._seen:
                self.changed.set()
            self._seen = mtime

    def present(self, image: str) -> bool:
        ref = parse_reference(image)
        if ref.catalog_key not in CATALOG:
            return self.loaded(image) is not None
        path = self._manifest(digest_of(ref))
        if not path.exists():
            return False
        return ref.name in json.loads(path.read_text())["names"]

    def images(self) -> list[dict[str, Any]]:
        """``status.images`` of the Node: every pulled image with its names (digest form first) and size."""
        out = []
        for path in sorted(self.root.glob("sha256-*.json")):
            try:
                manifest = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            out.append({"names": manifest["names"], "sizeBytes": manifest["size"]})
        return sorted(out, key=lambda image: -image["sizeBytes"])

    def pull_sync(self, image: str) -> tuple[int, bool]:
        """Resolve the image and record it on the node under its normalised name: (its size, whether the node's
        images changed). Pulling an image the node already has under that name changes nothing and writes
        nothing, as a registry pull whose layers are all present (raises ``PullError``)."""
        ref = parse_reference(image)
        config = CATALOG.get(ref.catalog_key)
        if config is None and (loaded := self.loaded(image)) is not None:
            return int(loaded["size"]), False  # imported onto the node: there is nothing to fetch
        if config is None:
            raise PullError(f'failed to resolve reference "{ref.name}": {ref.name}: not found (the kubelab image '
                            f"store has {', '.join(sorted(CATALOG))}, under any tag)")
        digest = digest_of(ref)
        path = self._manifest(digest)
        names = [f"{ref.repository}@{digest}"]
        if path.exists():
            names = json.loads(path.read_text())["names"]
        wanted = [name for name in (ref.name, f"{ref.repository}@{digest}") if name not in names]
        if not wanted and path.exists():
            return config.size, False
        names.extend(wanted)
        manifest = {"names": names, "size": config.size, "entrypoint": config.entrypoint, "cmd": config.cmd,
                    "description": config.description, "digest": digest}
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(manifest, indent=1))
        tmp.replace(path)
        return config.size, True

    async def pull(self, image: str) -> tuple[int, float, float]:
        """Pull serialised with the node's other pulls: (size, seconds pulling, seconds including waiting)."""
        queued = time.monotonic()
        async with self._lock:
            began = time.monotonic()
            size, changed = self.pull_sync(image)
            done = time.monotonic()
        if changed:
            self.changed.set()  # the node posts its status.images now instead of at its next status update
        return size, done - began, done - queued

    async def ensure(self, pod: dict[str, Any], container: dict[str, Any], record: Recorder,
                     now: float | None = None) -> PullFailure | None:
        """kubelet's ``EnsureImageExists``: apply the pull policy, pull if needed, with events; ``None`` when the
        image is ready to run, else why not and when to try again."""
        image = container.get("image") or ""
        record = partial(record, container=container.get("name"))  # image events are about the container
        policy = container.get("imagePullPolicy") or default_pull_policy(image)
        present = self.present(image)
        if policy == "Never" and not present:
            message = f'Container image "{image}" is not present with pull policy of Never'
            record(pod, "Warning", "ErrImageNeverPull", message)
            return PullFailure("ErrImageNeverPull", message, self.backoff_base)
        if present and policy != "Always":
            record(pod, "Normal", "Pulled", f'Container image "{image}" already present on machine')
            return None
        now = time.monotonic() if now is None else now
        key = (pod["metadata"].get("uid", ""), image)
        backoff = self._backoff.get(key)
        if backoff is not None and now < backoff.until:
            message = f'Back-off pulling image "{image}"'
            record(pod, "Normal", "BackOff", message)
            record(pod, "Warning", "Failed", "Error: ImagePullBackOff")
            return PullFailure("ImagePullBackOff", message, backoff.until - now)
        record(pod, "Normal", "Pulling", f'Pulling image "{image}"')
        try:
            size, pulling, total = await self.pull(image)
        except (PullError, OSError) as err:
            delay = self.backoff_base if backoff is None else min(backoff.delay * 2, self.backoff_max)
            self._backoff[key] = _BackOff(delay, now + delay)
            message = f'Failed to pull image "{image}": {err}'
            record(pod, "Warning", "Failed", message)
            record(pod, "Warning", "Failed", "Error: ErrImagePull")
            # The next sync comes soon (the status write triggers one in kubelet) and shows ImagePullBackOff.
            return PullFailure("ErrImagePull", message, min(1.0, delay / 2))
        self._backoff.pop(key, None)
        record(pod, "Normal", "Pulled", f'Successfully pulled image "{image}" in {_duration(pulling)} '
                                        f"({_duration(total)} including waiting). Image size: {size} bytes.")
        return None

    def forget(self, pod_uid: str) -> None:
        """Drop a finished pod's back-off entries."""
        for key in [k for k in self._backoff if k[0] == pod_uid]:
            del self._backoff[key]


def _duration(seconds: float) -> str:
    """Go's ``time.Duration`` rounded as kubelet prints it: ``12ms``, ``1.5s``."""
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:.0f}ms" if ms >= 1 else f"{seconds * 1e6:.0f}µs"
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
