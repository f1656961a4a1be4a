"""From the metrics' proposal to the replica count the HPA applies (``horizontal.go``'s normalization): pure.

Kube keeps, per HPA, the recent recommendations and (with ``spec.behavior``) the recent scale events, and derives
the applied count in two steps, each leaving a condition:

* stabilization (``AbleToScale``: ``ScaleDownStabilized`` / ``ScaleUpStabilized`` when it changed the proposal,
  else ``ReadyForNewScale``): without behavior, the highest recommendation of the
  ``--horizontal-pod-autoscaler-downscale-stabilization`` window (5 min); with behavior, the proposal kept
  between the lowest recommendation of the scale-up window and the highest of the scale-down window;
* limits (``ScalingLimited``: ``DesiredWithinRange`` False, or ``TooFewReplicas`` / ``TooManyReplicas`` /
  ``ScaleUpLimit`` / ``ScaleDownLimit`` True when they cut the count): min/max replicas, and the rate —
  without behavior at most ``max(2 × current, 4)``; with behavior the policies of the direction (Pods: ± value,
  Percent: × (1 ± value %), over the replicas at the start of each policy's period, ``selectPolicy`` Max/Min/
  Disabled choosing among them).

``Recommendations`` holds one HPA's history; the clock is passed in so tests move time instead of waiting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

Condition = tuple[str, str, str, str]  # type, status, reason, message


@dataclass(slots=True)
class Recommendations:
    """One HPA's recent recommendations and scale events (``recommendations``, ``scaleUpEvents`` …)."""

    recommendations: list[tuple[int, datetime]] = field(default_factory=list)
    scale_up_events: list[tuple[int, datetime]] = field(default_factory=list)
    scale_down_events: list[tuple[int, datetime]] = field(default_factory=list)

    def record_initial(self, replicas: int, now: datetime) -> None:
        """``recordInitialRecommendation``: the current count is the first recommendation."""
        if not self.recommendations:
            self.recommendations.append((replicas, now))

    def record(self, desired: int, now: datetime, is_old: Any) -> None:
        for i, (_, at) in enumerate(self.recommendations):
            if is_old(at):
                self.recommendations[i] = (desired, now)
                return
        self.recommendations.append((desired, now))

    def store_scale_event(self, behavior: dict[str, Any] | None, previous: int, new: int, now: datetime) -> None:
        """``storeScaleEvent``: remember a rescale for the rate policies, forgetting events older than the
        longest period of the direction's policies."""
        if behavior is None:
            return
        up = new > previous
        events = self.scale_up_events if up else self.scale_down_events
        rules = behavior.get("scaleUp" if up else "scaleDown") or {}
        longest = max((p.get("periodSeconds") or 0 for p in rules.get("policies") or []), default=0)
        events[:] = [e for e in events if e[1] > now - timedelta(seconds=longest)]
        events.append((abs(new - previous), now))


def _limit_condition(desired: int, limited: int, reason: str, message: str) -> Condition:
    return ("ScalingLimited", "False" if desired == limited else "True", reason, message)


def scale_up_limit(current: int) -> int:
    """``calculateScaleUpLimit``: without behavior, at most double (and at least 4)."""
    return max(2 * current, 4)


def normalize(recs: Recommendations, current: int, proposed: int, min_replicas: int, max_replicas: int,
              now: datetime, downscale_window: timedelta) -> tuple[int, list[Condition]]:
    """``normalizeDesiredReplicas``: the HPA without ``spec.behavior``."""
    cutoff = now - downscale_window
    stabilized = max([proposed] + [r for r, at in recs.recommendations if at >= cutoff])
    recs.record(proposed, now, lambda at: at < cutoff)
    conditions: list[Condition] = [
        ("AbleToScale", "True", "ScaleDownStabilized",
         "recent recommendations were higher than current one, applying the highest recent recommendation")
        if stabilized != proposed else
        ("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")]
    limit = scale_up_limit(current)
    if max_replicas > limit:
        maximum, reason, message = limit, "ScaleUpLimit", \
            "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum, reason, message = max_replicas, "TooManyReplicas", \
            "the desired replica count is more than the maximum replica count"
    if stabilized < min_replicas:
        desired, reason, message = min_replicas, "TooFewReplicas", \
            "the desired replica count is less than the minimum replica count"
    elif stabilized > maximum:
        desired = maximum
    else:
        desired, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
    conditions.append(_limit_condition(desired, stabilized, reason, message))
    return desired, conditions


def _changed_within(events: list[tuple[int, datetime]], period_seconds: int, now: datetime) -> int:
    """``getReplicasChangePerPeriod``."""
    cutoff = now - timedelta(seconds=period_seconds)
    return sum(change for change, at in events if at > cutoff)


def _policy_limit(recs: Recommendations, current: int, rules: dict[str, Any], now: datetime, up: bool) -> int:
    """``calculateScaleUpLimitWithScalingRules`` / ``calculateScaleDownLimitWithBehaviors``."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        period = policy.get("periodSeconds") or 0
        start = (current - _changed_within(recs.scale_up_events, period, now)
                 + _changed_within(recs.scale_down_events, period, now))
        value = policy.get("value") or 0
        if policy.get("type") == "Pods":
            proposals.append(start + value if up else start - value)
        elif up:
            proposals.append(math.ceil(start * (1 + value / 100)))
        else:
            proposals.append(int(start * (1 - value / 100)))
    if not proposals:
        return current
    # Max picks the biggest change: the highest count up, the lowest count down; Min the smallest change.
    return (max if (select == "Max") == up else min)(proposals)


def normalize_with_behavior(recs: Recommendations, behavior: dict[str, Any], current: int, proposed: int,
                            min_replicas: int, max_replicas: int, now: datetime,
                            downscale_window: timedelta) -> tuple[int, list[Condition]]:
    """``normalizeDesiredReplicasWithBehaviors``."""
    scale_up = behavior.get("scaleUp") or {}
    scale_down = dict(behavior.get("scaleDown") or {})
    if scale_down.get("stabilizationWindowSeconds") is None:  # maybeInitScaleDownStabilizationWindow
        scale_down["stabilizationWindowSeconds"] = int(downscale_window.total_seconds())
    up_cutoff = now - timedelta(seconds=scale_up.get("stabilizationWindowSeconds") or 0)
    down_cutoff = now - timedelta(seconds=scale_down["stabilizationWindowSeconds"])
    up_rec = min([proposed] + [r for r, at in recs.recommendations if at > up_cutoff])
    down_rec = max([proposed] + [r for r, at in recs.recommendations if at > down_cutoff])
    stabilized = min(max(current, up_rec), down_rec)
    recs.record(proposed, now, lambda at: at < up_cutoff and at < down_cutoff)
    if stabilized == proposed:
        ready: Condition = ("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
    elif proposed >= current:
        ready = ("AbleToScale", "True", "ScaleUpStabilized",
                 "recent recommendations were lower than current one, applying the lowest recent recommendation")
    else:
        ready = ("AbleToScale", "True", "ScaleDownStabilized",
                 "recent recommendations were higher than current one, applying the highest recent recommendation")
    desired, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
    if stabilized > current:
        limit = max(_policy_limit(recs, current, scale_up, now, up=True), current)
        maximum, why, text = (limit, "ScaleUpLimit",
                              "the desired replica count is increasing faster than the maximum scale rate") \
            if max_replicas > limit else (max_replicas, "TooManyReplicas",
                                          "the desired replica count is more than the maximum replica count")
        if stabilized > maximum:
            desired, reason, message = maximum, why, text
    elif stabilized < current:
        limit = min(_policy_limit(recs, current, scale_down, now, up=False), current)
        minimum, why, text = (limit, "ScaleDownLimit",
                              "the desired replica count is decreasing faster than the maximum scale rate") \
            if min_replicas < limit else (min_replicas, "TooFewReplicas",
                                          "the desired replica count is less than the minimum replica count")
        if stabilized < minimum:
            desired, reason, message = minimum, why, text
    return desired, [ready, _limit_condition(desired, stabilized, reason, message)]
