"""The crash-loop back-off policy: kube's doBackOff over flowcontrol.Backoff, with an explicit clock."""

from kubelet.backoff import CrashBackoff


def test_first_exit_restarts_at_once_then_waits_double() -> None:
    backoff = CrashBackoff(base=10, max=300)
    waits = []
    now = 0.0
    for _ in range(8):
        now += 1  # the container runs a second and exits
        delay = backoff.delay(now)
        waits.append(delay)
        now += delay
        backoff.next(now)  # the restart goes ahead
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300]


def test_an_exit_long_after_the_last_restart_starts_over() -> None:
    backoff = CrashBackoff(base=10, max=300)
    assert backoff.delay(1) == 0
    backoff.next(1)
    assert backoff.delay(5) == 10
    backoff.next(15)
    assert backoff.delay(15 + 600) == 20  # not more than 2 x max after the last update: still backing off
    assert backoff.delay(15 + 601) == 0  # ran over ten minutes: restarted at once again
    backoff.next(616)
    assert backoff.delay(617) == 10
