"""Custom resource creates per second through the apiserver, against built-in ConfigMap and Pod creates measured
in the same run (the baselines).

A CRD with a structural schema (typed fields, a default, an enum, a bounded integer, a status subresource) is
created first; then, at concurrency 1 and 50, runs alternate between ``POST`` of ConfigMaps, of custom resources
and of pods of about the same size, so the machine's load hits all three alike. A custom resource create pays
for pruning, defaulting and schema validation instead of the typed OpenAPI decoding a built-in kind gets.
Each figure is the median of ``--repeat`` runs; the ratio is custom resources / ConfigMaps. Target: >= 0.8.
A second CRD with the same schema plus three CEL rules (``x-kubernetes-validations``: a bound between two fields,
a string check with ``messageExpression``, a map size) is created alike: ``cel/custom`` is what the rules cost.

    python bench/crd.py [--count 2000] [--repeat 3] [--master URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx

from api import cluster, creates, pod

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000, help="creates per run at concurrency 50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", help="use a running apiserver")
    args = parser.parse_args()

    with cluster(args.master) as (master, _):
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
    main()
