"""Cron schedules as CronJobs use them (``robfig/cron``'s standard parser): parsed by the apiserver to validate
``spec.schedule`` and by the cronjob controller to find when a Job is due.

Five fields, minute hour day-of-month month day-of-week, each ``*``, ``?``, a value, a range ``a-b`` or a list, with
an optional step ``/n``; months and weekdays also by name (``jan``, ``mon``; 7 is Sunday too); or a descriptor
(``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``, ``@hourly``).  When both
day fields are restricted a day matches either, as in cron.  ``next_after`` walks forward a field at a time in the
schedule's time zone, so a schedule that never fires (``0 0 30 2 *``) gives None rather than a loop forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_MONTHS = {name: i + 1 for i, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                                 "oct", "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, lowest, highest, names)
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS))
_YEARS_AHEAD = 5


class CronError(ValueError):
    """An unparsable schedule; the message is robfig/cron's wording."""


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    def _day_matches(self, t: datetime) -> bool:
        dom, dow = t.day in self.days, (t.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, after: datetime, zone: tzinfo) -> datetime | None:
        """The first time strictly after ``after`` (aware) that the schedule fires, in ``zone``; None if never."""
        t = after.astimezone(zone).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t.year + _YEARS_AHEAD
        while t.year <= limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            return t
        return None


def parse(spec: str) -> Schedule:
    """Parse a schedule; ``CronError`` with robfig/cron's message when it is not one."""
    text = _DESCRIPTORS.get(spec.strip(), spec.strip())
    if text.startswith("@"):
        raise CronError(f"unrecognized descriptor: {text}")
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    values = [_field(f, *meta[1:]) for f, meta in zip(fields, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in values[4])
    return Schedule(values[0], values[1], values[2], values[3], weekdays,
                    any_day=fields[2] in ("*", "?"), any_weekday=fields[4] in ("*", "?"))


def _field(text: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        out.update(_range(part, low, high, names))
    return frozenset(out)


def _range(part: str, low: int, high: int, names: dict[str, int]) -> range:
    body, _, step_text = part.partition("/")
    step = _number(step_text, {}) if step_text else 1
    if step <= 0:
        raise CronError(f"step of range should be a positive number: {part}")
    if body in ("*", "?"):
        first, last = low, high
    else:
        first_text, dash, last_text = body.partition("-")
        first = _number(first_text, names)
        last = _number(last_text, names) if dash else (high if step_text else first)
    if first < low:
        raise CronError(f"beginning of range ({first}) below minimum ({low}): {part}")
    if last > high:
        raise CronError(f"end of range ({last}) above maximum ({high}): {part}")
    if first > last:
        raise CronError(f"beginning of range ({first}) beyond end of range ({last}): {part}")
    return range(first, last + 1, step)


def _number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise CronError(f"failed to parse int from {text}: strconv.Atoi: parsing {text!r}: invalid syntax".replace(
            "'", '"'))
    return int(text)
