"""Log selection as the kubelet's ReadLogs: since (seconds or time), then tail, then limitBytes."""

from kubelet import logs

LINES = [
    "2026-12-04T10:00:00.000000Z stdout F one",
    "2026-12-04T10:00:05.500000Z stdout F two",
    "2026-12-04T10:00:09.000000Z stderr F three",
]
NOW = 1796378410.0  # 2026-12-04T10:00:10Z


def test_since_seconds_keeps_lines_not_before_the_cut_off() -> None:
    assert logs.select(LINES, {"sinceSeconds": "5"}, now=NOW) == "two\nthree\n"
    assert logs.select(LINES, {"sinceSeconds": "1"}, now=NOW) == "three\n"
    assert logs.select(LINES, {"sinceSeconds": "100"}, now=NOW) == "one\ntwo\nthree\n"


def test_since_time_is_inclusive_and_works_with_timestamps() -> None:
    query = {"sinceTime": "2026-12-04T10:00:05.5Z", "timestamps": "true"}
    assert logs.select(LINES, query) == ("2026-12-04T10:00:05.500000Z two\n"
                                         "2026-12-04T10:00:09.000000Z three\n")
    assert logs.select(LINES, {"sinceTime": "2026-12-04T10:00:06Z"}) == "three\n"


def test_since_seconds_wins_over_since_time_then_tail_and_limit() -> None:
    query = {"sinceSeconds": "100", "sinceTime": "2026-12-04T10:00:06Z", "tailLines": "2", "limitBytes": "6"}
    assert logs.select(LINES, query, now=NOW) == "two\nth"
    assert logs.select(LINES, {"tailLines": "0"}) == ""
