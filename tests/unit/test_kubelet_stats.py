"""The kubelet's /proc readings: stat/statm parsing, per-session sums over a /proc tree, the families served."""

from __future__ import annotations

from pathlib import Path

from apimachinery import prometheus
from kubelet.stats import (
    CLK_TCK,
    PAGE_SIZE,
    ContainerRef,
    Usage,
    parse_stat,
    parse_statm_rss,
    parse_uptime,
    resource_families,
    session_usage,
)


def stat_line(pid: int, comm: str, session: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0,
              start: int = 100, state: str = "S") -> str:
    # fields 3.. : state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
    # cstime priority nice num_threads itrealvalue starttime vsize rss ...
    rest = [state, "1", str(session), str(session), "0", "-1", "4194304", "0", "0", "0", "0", str(utime),
            str(stime), str(cutime), str(cstime), "20", "0", "1", "0", str(start), "1000", "50"]
    return f"{pid} ({comm}) " + " ".join(rest) + "\n"


def test_parse_stat_counts_fields_after_the_last_paren() -> None:
    stat = parse_stat(stat_line(4242, "python3 -c (x) y", 4240, 150, 50, 7, 3, start=987).encode())
    assert (stat.pid, stat.session, stat.cpu_ticks, stat.start_ticks) == (4242, 4240, 210, 987)


def test_parse_statm_and_uptime() -> None:
    assert parse_statm_rss(b"6000 2700 1500 1 0 800 0\n") == 2700
    assert parse_uptime("35123.45 70000.12\n") == 35123.45


def fake_proc(root: Path, processes: list[tuple[str, int]]) -> None:
    for line, rss_pages in processes:
        pid = line.split()[0]
        (root / pid).mkdir()
        (root / pid / "stat").write_text(line)
        (root / pid / "statm").write_text(f"9000 {rss_pages} 10 1 0 100 0\n")
    (root / "self").mkdir()  # not a pid: skipped


def test_session_usage_sums_a_containers_processes(tmp_path: Path) -> None:
    fake_proc(tmp_path, [
        (stat_line(100, "sh", 100, 10, 5, cutime=20, cstime=5, start=500), 100),  # container leader
        (stat_line(101, "python3", 100, 300, 0, start=510), 2000),  # its child
        (stat_line(200, "sleep", 200, 1, 1, start=600), 50),  # another container
        (stat_line(300, "bash", 300, 999, 999), 10),  # not a container
    ])
    usage = session_usage({100, 200}, tmp_path)
    assert set(usage) == {100, 200}
    assert usage[100].cpu_ticks == 340 and usage[100].cpu_seconds == 340 / CLK_TCK
    assert usage[100].memory_bytes == 2100 * PAGE_SIZE and usage[100].start_ticks == 500
    assert (usage[200].cpu_ticks, usage[200].memory_bytes) == (2, 50 * PAGE_SIZE)


def test_families_carry_kubelet_metric_names_and_pod_sums() -> None:
    spin = ContainerRef("default", "busy", "spin", "c1", 100)
    idle = ContainerRef("default", "busy", "idle", "c2", 200)
    measured = [(spin, Usage(CLK_TCK * 5, 4096, start_ticks=CLK_TCK * 2)), (idle, Usage(0, 8192))]
    families = resource_families(measured, Usage(CLK_TCK * 6, 20480), boot=1_000, now_ms=1_500_000)
    samples = {(s.name, s.labels.get("container", ""), s.labels.get("pod", "")): s
               for s in prometheus.parse(prometheus.render(families))}
    assert samples[("container_cpu_usage_seconds_total", "spin", "busy")].value == 5.0
    assert samples[("container_memory_working_set_bytes", "idle", "busy")].value == 8192
    assert samples[("container_start_time_seconds", "spin", "busy")].value == 1_002.0
    assert samples[("pod_cpu_usage_seconds_total", "", "busy")].value == 5.0
    assert samples[("pod_memory_working_set_bytes", "", "busy")].value == 12288
    assert samples[("node_cpu_usage_seconds_total", "", "")].value == 6.0
    assert samples[("node_memory_working_set_bytes", "", "")].timestamp_ms == 1_500_000
    assert samples[("resource_scrape_error", "", "")].value == 0
