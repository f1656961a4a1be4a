"""Custom resource creates per second through the apiserver, against built-in ConfigMap and Pod creates measured
in the same run (the baselines).

A CRD with a structural schema (typed fields, a default, an enum, a bounded integer, a status subresource) is
created first; then, at concurrency 1 and 50, runs alternate between ``POST`` of ConfigMaps, of custom resources
and of pods of about the same size, so the machine's load hits all three alike. A custom resource create pays
for pruning, defaulting and schema validation instead of the typed OpenAPI decoding a built-in kind gets.
Each figure is the median of ``--repeat`` runs; the ratio is custom resources / ConfigMaps. Target: >= 0.8.
A second CRD with the same schema plus three CEL rules (``x-kubernetes-validations``: a bound between two fields,
a string check with ``messageExpression``, a map size) is created alike: ``cel/custom`` is what the rules cost.

Webhook conversion (``--part conversion``): a CRD with versions v1 (storage) and v2 and ``strategy: Webhook``,
converted by bench/conversion_webhook.py (HTTPS, its own process). Creates of v1 objects need no conversion;
creates of v2 objects are converted to v1 for storage and back for the response (two webhook calls). Reads are
GETs by name of the same objects in v1 and in v2: each version's watch cache holds its objects converted once
per change, so a v2 read costs what a v1 read does. ``conv/same`` is converted / same-version.

    python bench/crd.py [--count 2000] [--repeat 3] [--master URL] [--part all|creates|conversion]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from api import cluster, creates, pod, run_concurrently

GROUP = "bench.kubelab.io"


RULES = [{"rule": "self.replicas <= 50 || self.mode == 'slow'", "message": "fast jobs run at most 50 replicas"},
         {"rule": "self.image.size() > 0 && !self.image.contains(' ')",
          "messageExpression": "'bad image: ' + self.image"},
         {"rule": "!has(self.env) || self.env.size() <= 16"}]


def crd(plural: str = "jobs", kind: str = "BenchJob", rules: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": {
        "image": {"type": "string"}, "schedule": {"type": "string", "pattern": r"^\S+( \S+){4}$"},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 100, "default": 1},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "env": {"type": "object", "additionalProperties": {"type": "string"}}}}
    if rules:
        spec["x-kubernetes-validations"] = rules
    schema = {"type": "object", "properties": {"spec": spec, "status": {"type": "object", "properties": {
        "ready": {"type": "integer"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


def custom(name: str, kind: str = "BenchJob") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"image": "busybox", "schedule": "*/5 * * * *", "mode": "fast",
                     "env": {"A": "1", "B": "two", "C": "three"}}}


def custom_with_rules(name: str) -> dict[str, Any]:
    return custom(name, "BenchCelJob")


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"image": "busybox", "schedule": "*/5 * * * *", "mode": "fast", "A": "1", "B": "two",
                     "C": "three"}}


def install_crd(master: str, definition: dict[str, Any]) -> None:
    resp = httpx.post(f"{master}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=definition)
    assert resp.status_code in (201, 409), resp.text
    plural = definition["spec"]["names"]["plural"]
    deadline = time.monotonic() + 30
    while httpx.get(f"{master}/apis/{GROUP}/v1/namespaces/default/{plural}").status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the CRD {plural} was not served")
        time.sleep(0.1)


KINDS = (("configmaps", "/api/v1/namespaces/{ns}/configmaps", config_map),
         ("custom", f"/apis/{GROUP}/v1/namespaces/{{ns}}/jobs", custom),
         ("pods", "/api/v1/namespaces/{ns}/pods", pod),
         ("cel", f"/apis/{GROUP}/v1/namespaces/{{ns}}/celjobs", custom_with_rules))


def conversion_crd(bundle: str, port: int) -> dict[str, Any]:
    def version(name: str, field: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
            field: {"type": "integer"}, "image": {"type": "string"}, "mode": {"type": "string"}}}}}
        return {"name": name, "served": True, "storage": name == "v1", "schema": {"openAPIV3Schema": schema}}

    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"convjobs.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "convjobs", "kind": "ConvJob"},
                     "versions": [version("v1", "replicas"), version("v2", "count")],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": {"url": f"https://127.0.0.1:{port}/convert", "caBundle": bundle},
                         "conversionReviewVersions": ["v1"]}}}}


def conv_job(version: str) -> Any:
    field = "replicas" if version == "v1" else "count"
    return lambda name: {"apiVersion": f"{GROUP}/{version}", "kind": "ConvJob", "metadata": {"name": name},
                         "spec": {field: 3, "image": "busybox", "mode": "fast"}}


async def reads(master: str, count: int, concurrency: int, objects: int = 100) -> tuple[float, float]:
    """GETs by name of ``objects`` ConvJobs created in v1, read in v1 then in v2: (v1 reads/s, v2 reads/s)."""
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    async with aiohttp.ClientSession(master, connector=aiohttp.TCPConnector(limit=concurrency + 5)) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": ns}}) as resp:
            assert resp.status == 201, await resp.text()
        for i in range(objects):
            async with session.post(f"/apis/{GROUP}/v1/namespaces/{ns}/convjobs", json=conv_job("v1")(f"r{i}")) as r:
                assert r.status == 201, await r.text()
        rates = []
        for version in ("v1", "v2"):
            async def get(i: int, version: str = version) -> None:
                async with session.get(f"/apis/{GROUP}/{version}/namespaces/{ns}/convjobs/r{i % objects}") as r:
                    if r.status != 200:
                        raise RuntimeError(f"read failed: {r.status} {await r.text()}")
                    await r.read()
            rates.append(await run_concurrently(count, concurrency, get))
    return rates[0], rates[1]


def bench_conversion(master: str, count: int, repeat: int) -> None:
    webhook = subprocess.Popen([sys.executable, str(Path(__file__).with_name("conversion_webhook.py"))],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert webhook.stdout is not None
        port, bundle = webhook.stdout.readline().split()
        install_crd(master, conversion_crd(bundle, int(port)))
        print(f"{'concurrency':>11} {'create v1/s':>12} {'create v2/s':>12} {'conv/same':>10} {'read v1/s':>10} "
              f"{'read v2/s':>10} {'conv/same':>10}")
        for concurrency, n in ((1, max(count // 4, 100)), (50, count)):
            rates: dict[str, list[float]] = {"c1": [], "c2": [], "r1": [], "r2": []}
            for _ in range(repeat):  # interleaved: both versions see the same machine
                for version in ("v1", "v2"):
                    rates[f"c{version[1]}"].append(asyncio.run(creates(
                        master, f"/apis/{GROUP}/{version}/namespaces/{{ns}}/convjobs", conv_job(version), n,
                        concurrency)))
                r1, r2 = asyncio.run(reads(master, n, concurrency))
                rates["r1"].append(r1)
                rates["r2"].append(r2)
            c1, c2, r1, r2 = (statistics.median(rates[k]) for k in ("c1", "c2", "r1", "r2"))
            print(f"{concurrency:>11} {c1:>12.0f} {c2:>12.0f} {c2 / c1:>10.2f} {r1:>10.0f} {r2:>10.0f} "
                  f"{r2 / r1:>10.2f}")
        print(f"(median of {repeat} interleaved runs; {count} creates and reads per run at concurrency 50)")
    finally:
        webhook.kill()
        webhook.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000, help="creates per run at concurrency 50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", help="use a running apiserver")
    parser.add_argument("--part", choices=("all", "creates", "conversion"), default="all")
    args = parser.parse_args()

    with cluster(args.master) as (master, _):
        if args.part in ("all", "conversion"):
            bench_conversion(master, args.count, args.repeat)
        if args.part == "conversion":
            return
        install_crd(master, crd())
        install_crd(master, crd("celjobs", "BenchCelJob", RULES))
        print(f"{'concurrency':>11} {'configmaps/s':>13} {'custom/s':>9} {'pods/s':>7} {'cel/s':>6} {'custom/cm':>10} "
              f"{'custom/pod':>11} {'cel/custom':>11}")
        for concurrency, count in ((1, max(args.count // 4, 100)), (50, args.count)):
            rates: dict[str, list[float]] = {name: [] for name, _, _ in KINDS}
            for _ in range(args.repeat):  # interleaved: the three see the same machine
                for name, path, make in KINDS:
                    rates[name].append(asyncio.run(creates(master, path, make, count, concurrency)))
            cm, cr, pods, cel = (statistics.median(rates[name]) for name, _, _ in KINDS)
            print(f"{concurrency:>11} {cm:>13.0f} {cr:>9.0f} {pods:>7.0f} {cel:>6.0f} {cr / cm:>10.2f} "
                  f"{cr / pods:>11.2f} {cel / cr:>11.2f}")
        print(f"(median of {args.repeat} interleaved runs; {args.count} creates per run at concurrency 50)")

if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
