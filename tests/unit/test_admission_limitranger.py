"""LimitRanger (``apiserver.admission.limitranger``) and LimitRange validation and defaulting
(``apiserver.registry.limitranges``): kube's defaults, annotation and texts."""

from __future__ import annotations

from typing import Any

from apiserver.admission.limitranger import aggregate, merge_defaults, pod_violations
from apiserver.registry.limitranges import LimitRangeStrategy

STRATEGY = LimitRangeStrategy()


def pod(**resources: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": resources}]}}


def test_defaults_fill_only_what_the_container_leaves_out() -> None:
    p = pod(limits={"cpu": "1"})
    merge_defaults(p, [{"type": "Container", "default": {"cpu": "300m", "memory": "128Mi"},
                        "defaultRequest": {"cpu": "100m"}}])
    assert p["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "100m"}}
    assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == \
        "LimitRanger plugin set: cpu request for container c; memory limit for container c"


def test_violations_use_kube_texts() -> None:
    item = {"type": "Container", "max": {"cpu": "500m"}, "min": {"memory": "64Mi"},
            "maxLimitRequestRatio": {"cpu": "2"}}
    problems = pod_violations(pod(requests={"cpu": "100m", "memory": "32Mi"}, limits={"cpu": "1"}), [item])
    assert problems == ["minimum memory usage per Container is 64Mi, but request is 32Mi",
                        "maximum cpu usage per Container is 500m, but limit is 1",
                        "cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000"]
    assert aggregate(problems[1:2]) == "maximum cpu usage per Container is 500m, but limit is 1"
    assert aggregate(problems[:2]).startswith("[minimum memory usage") and aggregate(problems).endswith("]")
    assert pod_violations(pod(), [{"type": "Container", "max": {"cpu": "1"}}]) == \
        ["maximum cpu usage per Container is 1.  No limit is specified"]


def test_pod_items_sum_the_containers() -> None:
    p = pod(requests={"cpu": "300m"}, limits={"cpu": "300m"})
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "300m"},
                                                                "limits": {"cpu": "300m"}}})
    assert pod_violations(p, [{"type": "Pod", "max": {"cpu": "500m"}}]) == \
        ["maximum cpu usage per Pod is 500m, but limit is 600m"]


def test_limit_range_defaulting_and_validation() -> None:
    obj: dict[str, Any] = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1Mi"}}]}}
    STRATEGY.prepare_for_create(obj)
    assert obj["spec"]["limits"][0]["default"] == {"cpu": "1"}
    assert obj["spec"]["limits"][0]["defaultRequest"] == {"cpu": "1", "memory": "1Mi"}
    bad = {"spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
                               {"type": "Pod", "default": {"cpu": "1"}}, {"type": "Container"}]}}
    assert [f"{c.field}: {c.message}" for c in STRATEGY.validate(bad)] == [
        'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
        'spec.limits[2].type: Duplicate value: "Container"',
    ]
