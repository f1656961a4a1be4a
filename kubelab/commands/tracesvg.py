"""The creation flow of one pod as a sequence diagram (SVG), drawn from the same steps as `kubelab trace`.

One lifeline per component — client, apiserver, etcd, controller-manager, scheduler, kubelet — and one arrow per
hop of the seed's 13 steps: requests and writes solid, watch notifications (etcd → apiserver → the watching
components) dashed and in another colour, the kubelet's own work (pull, create, start) as arrows back onto its
lifeline. Each arrow carries its step number, what happened and the latency the trace measured (``~`` where a
whole-second timestamp is involved; ``(in N)`` for a watch delivery that nothing records, whose time is within
step N's latency; ``–`` where no component recorded a time for that hop). With exact times (the audit log) the
title gives the pod's critical path in milliseconds. Steps that do not
apply to the pod, or that nobody recorded, are drawn faint and say so.

Written as SVG text directly rather than through a plotting library: the picture is boxes, lines and labels, the
output stays small, deterministic and diffable, and nothing (fonts, a browser, a display) is needed to make it.
Labels are English or Chinese (``lang="zh"``, the terms of Kubernetes' Chinese documentation); a viewer needs a
CJK font for the latter.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape

from kubelab.commands.tracesteps import Evidence, Step, critical_path, latency_text

Lang = Literal["en", "zh"]
Kind = Literal["write", "watch", "local"]

LIFELINES = ("client", "apiserver", "etcd", "controller-manager", "scheduler", "kubelet")
TITLES: dict[Lang, dict[str, str]] = {
    "en": {"client": "client (kubectl)", "apiserver": "kube-apiserver", "etcd": "etcd",
           "controller-manager": "controller-manager", "scheduler": "scheduler", "kubelet": "kubelet"},
    "zh": {"client": "客户端 (kubectl)", "apiserver": "APIServer", "etcd": "etcd",
           "controller-manager": "Controller Manager", "scheduler": "Scheduler", "kubelet": "kubelet"},
}
# Each step's hop: from, to, and whether it is a request/write or a watch notification.
HOPS: dict[str, tuple[str, str, Kind]] = {
    "2": ("client", "apiserver", "write"), "3": ("apiserver", "etcd", "write"),
    "4": ("etcd", "apiserver", "watch"), "5": ("apiserver", "controller-manager", "watch"),
    "6": ("controller-manager", "apiserver", "write"), "7": ("apiserver", "etcd", "write"),
    "8": ("apiserver", "scheduler", "watch"), "9": ("scheduler", "apiserver", "write"),
    "10": ("apiserver", "etcd", "write"), "11": ("apiserver", "kubelet", "watch"),
    "13": ("kubelet", "apiserver", "write"),
}
WATCHERS = ("controller-manager", "scheduler", "kubelet")  # step 1: each starts its list + watch
ZH: dict[str, str] = {
    "1": "启动并监听 APIServer (List-Watch)", "2": "提交创建请求", "3": "写入 etcd", "4": "etcd 发送 Create 事件",
    "5": "监听到事件：副本数不足", "6": "创建 Pod 副本", "7": "Pod 写入 etcd", "8": "监听到未调度的 Pod",
    "9": "绑定到节点 {node}", "10": "绑定结果写入 etcd", "11": "监听到绑定到本节点的 Pod",
    "Pulling": "拉取镜像", "Pulled": "镜像就绪", "Created": "创建容器", "Started": "启动容器",
    "13": "上报 Running 状态，写入 etcd",
}
TEXT: dict[Lang, dict[str, str]] = {
    "en": {"title": "Creation flow of pod {pod}", "write": "request / write", "watch": "watch notification",
           "na": "n/a", "unseen": "not observed", "within": "(in {step})",
           "total": " — steps {start}→{end}: {ms:.1f} ms",
           "latency": "latency: from the previous step with a time; ~ whole-second timestamps (±1 s); "
           "(in N) no record of its own, within step N's latency; – no time recorded"},
    "zh": {"title": "Pod {pod} 的创建过程", "write": "请求 / 写入", "watch": "Watch 事件通知", "na": "不适用",
           "unseen": "未观察到", "within": "（计入 {step}）",
           "total": " — 第 {start}→{end} 步：{ms:.1f} 毫秒",
           "latency": "延迟：距上一个有时间记录的步骤；~ 表示秒级时间戳（±1 秒）；（计入 N）表示该步没有单独的记录，"
           "其耗时计入第 N 步；– 表示没有时间记录"},
}

COLUMN, TOP, ROW, MARGIN = 170, 96, 30, 40
COLOURS = {"write": "#1f5fa8", "watch": "#c0622b", "local": "#2e7d32"}


@dataclass(frozen=True, slots=True)
class Arrow:
    number: str
    source: str
    target: str
    kind: Kind
    label: str
    latency: str
    faint: bool


def arrows(steps: list[Step], lang: Lang = "en") -> list[Arrow]:
    """The hops to draw, in the trace's order (step 1 is three arrows, one per watching component)."""
    out: list[Arrow] = []
    for step in steps:
        label, faint = _label(step, lang), not (step.observed and step.applicable)
        if not step.applicable:
            label += f" ({TEXT[lang]['na']})"
        elif not step.observed:
            label += f" ({TEXT[lang]['unseen']})"
        latency = (latency_text(step).replace("-", "–") if step.latency is not None
                   else TEXT[lang]["within"].format(step=step.included_in) if step.included_in else "–")
        if step.number == "1":
            out += [Arrow("1", who, "apiserver", "watch", label if who == WATCHERS[0] else "",
                          latency if who == WATCHERS[0] and step.latency is not None else "", faint)
                    for who in WATCHERS]
        elif step.number in HOPS:
            source, target, kind = HOPS[step.number]
            out.append(Arrow(step.number, source, target, kind, label, latency, faint))
        elif step.number.startswith("12") and step.number != "12":
            out.append(Arrow(step.number, "kubelet", "kubelet", "local", label, latency, faint))
    return out


def _label(step: Step, lang: Lang) -> str:
    if lang == "en":
        return f"{step.number}. {step.what}"
    key = step.number
    if step.number.startswith("12") and step.number != "12":
        key = next((r for r in ("Pulling", "Pulled", "Created", "Started") if step.evidence.startswith(f"event {r}")),
                   _sub_step_reason(step.what))
    node = step.what.rsplit(" ", 1)[-1] if step.number == "9" else ""
    return f"{step.number}. {ZH.get(key, step.what).format(node=node)}"


def _sub_step_reason(what: str) -> str:
    """The kubelet sub-step a row describes, when its event is missing (its English text says which)."""
    for prefix, reason in (("pull image", "Pulling"), ("image pulled", "Pulled"), ("create container", "Created"),
                           ("start container", "Started")):
        if what.startswith(prefix):
            return reason
    return what


def render_svg(ev: Evidence, steps: list[Step], lang: Lang = "en") -> str:
    """The whole diagram as an SVG document (UTF-8 text)."""
    hops = arrows(steps, lang)
    x = {name: MARGIN + COLUMN // 2 + i * COLUMN for i, name in enumerate(LIFELINES)}
    width = MARGIN * 2 + COLUMN * len(LIFELINES) + 260  # room for the last column's labels and latencies
    bottom = TOP + ROW * (len(hops) + 1)
    height = bottom + 70
    meta = ev.pod.get("metadata") or {}
    node = (ev.pod.get("spec") or {}).get("nodeName")
    title = TEXT[lang]["title"].format(pod=f"{meta.get('namespace')}/{meta.get('name')}")
    path = critical_path(steps)
    if path is not None and path["exact"]:
        title += TEXT[lang]["total"].format(start=path["from"], end=path["to"], ms=path["total_ms"])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        '<defs>' + "".join(
            f'<marker id="head-{kind}" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
            f'<path d="M0,0 L10,4 L0,8 z" fill="{colour}"/></marker>' for kind, colour in COLOURS.items()) + "</defs>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{MARGIN}" y="28" font-size="16" font-weight="bold">{escape(title)}</text>',
    ]
    for name in LIFELINES:
        label = TITLES[lang][name] + (f" ({node})" if name == "kubelet" and node else "")
        parts += [
            f'<rect x="{x[name] - COLUMN // 2 + 8}" y="44" width="{COLUMN - 16}" height="30" rx="4" '
            f'fill="#eef2f7" stroke="#5b6b7f"/>',
            f'<text x="{x[name]}" y="64" text-anchor="middle" font-weight="bold" class="lifeline">'
            f'{escape(label)}</text>',
            f'<line x1="{x[name]}" y1="74" x2="{x[name]}" y2="{bottom}" stroke="#9aa5b1" stroke-dasharray="2,3"/>',
        ]
    for row, hop in enumerate(hops):
        y = TOP + ROW * row
        parts += _arrow(hop, x, y)
    legend_y = bottom + 24
    parts += [
        f'<line x1="{MARGIN}" y1="{legend_y}" x2="{MARGIN + 40}" y2="{legend_y}" stroke="{COLOURS["write"]}" '
        f'stroke-width="1.6" marker-end="url(#head-write)"/>',
        f'<text x="{MARGIN + 48}" y="{legend_y + 4}">{escape(TEXT[lang]["write"])}</text>',
        f'<line x1="{MARGIN + 200}" y1="{legend_y}" x2="{MARGIN + 240}" y2="{legend_y}" stroke="{COLOURS["watch"]}" '
        f'stroke-width="1.6" stroke-dasharray="6,4" marker-end="url(#head-watch)"/>',
        f'<text x="{MARGIN + 248}" y="{legend_y + 4}">{escape(TEXT[lang]["watch"])}</text>',
        f'<text x="{MARGIN}" y="{legend_y + 24}" fill="#555">{escape(TEXT[lang]["latency"])}</text>',
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def _arrow(hop: Arrow, x: dict[str, int], y: int) -> list[str]:
    colour = COLOURS[hop.kind]
    opacity = ' opacity="0.45"' if hop.faint else ""
    dash = ' stroke-dasharray="6,4"' if hop.kind == "watch" else ""
    group = f'<g class="hop {hop.kind}" data-step="{escape(hop.number)}"{opacity}>'
    if hop.kind == "local":
        x0 = x[hop.source]
        path = (f'<path d="M{x0},{y} h28 v14 h-26" fill="none" stroke="{colour}" stroke-width="1.6" '
                f'marker-end="url(#head-local)"/>')
        label_x, anchor = x0 + 36, "start"
    else:
        x1, x2 = x[hop.source], x[hop.target]
        path = (f'<line x1="{x1}" y1="{y + 8}" x2="{x2 - 4 if x2 > x1 else x2 + 4}" y2="{y + 8}" stroke="{colour}" '
                f'stroke-width="1.6"{dash} marker-end="url(#head-{hop.kind})"/>')
        label_x, anchor = (min(x1, x2) + 6, "start")
    out = [group, path]
    if hop.label:
        latency = (f'<tspan class="latency" fill="#333" font-weight="bold" dx="8">{escape(hop.latency)}</tspan>'
                   if hop.latency else "")
        out.append(f'<text x="{label_x}" y="{y + 3}" text-anchor="{anchor}" class="label">{escape(hop.label)}'
                   f"{latency}</text>")
    out.append("</g>")
    return out


class NoConverter(RuntimeError):
    """No program on this machine turns SVG into PNG."""


def to_png(svg: str, out: Path, *, browser_only: bool = False) -> None:
    """Rasterise with ``rsvg-convert`` (librsvg) or headless Chromium, whichever is installed; ``browser_only``:
    Chromium even where librsvg is there (a test that must see a browser draw it)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "flow.svg"
        source.write_text(svg, encoding="utf-8")
        if not browser_only and (rsvg := shutil.which("rsvg-convert")):
            subprocess.run([rsvg, "-o", str(out), str(source)], check=True, timeout=60)
            return
        browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
        if browser is None:
            raise NoConverter("--png needs rsvg-convert (Debian: librsvg2-bin) or chromium; --svg needs neither")
        size = svg.split('viewBox="0 0 ', 1)[1].split('"', 1)[0].split()
        # A profile of its own: on the user's default one, a Chromium already running (another `kubelab trace
        # --png`, the user's browser) would take the screenshot request over and this one write nothing.
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={Path(tmp) / 'profile'}",
                        f"--window-size={size[0]},{size[1]}", f"--screenshot={out.resolve()}", source.as_uri()],
                       check=True, timeout=120, capture_output=True)
