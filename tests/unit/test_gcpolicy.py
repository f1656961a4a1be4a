"""apimachinery.gcpolicy: the collector's thresholds for components, and the zygote's frozen import-time heap."""

from __future__ import annotations

import json
import subprocess
import sys

from apimachinery.gcpolicy import THRESHOLDS


def run(code: str) -> dict:
    """``code`` in a fresh interpreter (the collector's settings are process-wide); its last line is JSON."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_components_collect_young_objects_rarely() -> None:
    got = run("import gc, json; before = gc.get_threshold()\n"
              "from apimachinery.gcpolicy import configure_gc; configure_gc()\n"
              "print(json.dumps({'before': before, 'after': gc.get_threshold()}))")
    assert tuple(got["before"]) == (700, 10, 10)  # CPython's defaults, which cost components 23-42 % of CPU
    assert tuple(got["after"]) == THRESHOLDS


def test_a_fork_server_freezes_what_it_imported_and_its_children_collect_the_rest() -> None:
    got = run("import gc, json, os, weakref\n"
              "import asyncio, email.parser  # stands for the zygote's imports\n"
              "from apimachinery.gcpolicy import freeze_for_fork; freeze_for_fork()\n"
              "frozen = gc.get_freeze_count()\n"
              "r, w = os.pipe()\n"
              "if os.fork() == 0:\n"
              "    class Node: pass\n"
              "    a, b = Node(), Node(); a.b, b.a = b, a; gone = weakref.ref(a); del a, b\n"
              "    gc.collect()\n"
              "    os.write(w, json.dumps({'cycle_collected': gone() is None, 'threshold': gc.get_threshold(),\n"
              "                            'frozen': gc.get_freeze_count()}).encode()); os._exit(0)\n"
              "os.wait(); child = json.loads(os.read(r, 4096))\n"
              "print(json.dumps({'frozen': frozen, **{'child_' + k: v for k, v in child.items()}}))")
    assert got["frozen"] > 10_000  # the imports' objects: no collection walks them again
    assert got["child_frozen"] > got["frozen"] - 100  # inherited by the forked component (less what it freed)
    assert tuple(got["child_threshold"]) == THRESHOLDS
    assert got["child_cycle_collected"]  # what the child makes is still collected
