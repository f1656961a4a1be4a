"""apimachinery.process: what every component's main does first — the collector's thresholds, and logging to
stderr at ``-v`` (0 warnings, 1 info, 2+ debug) in one format."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from apimachinery.gcpolicy import THRESHOLDS
from apimachinery.process import log_level


def test_verbosity_maps_to_klogs_levels() -> None:
    assert [log_level(v) for v in (-1, 0, 1, 2, 5)] == [logging.WARNING, logging.WARNING, logging.INFO,
                                                      logging.DEBUG, logging.DEBUG]


def test_a_component_starts_with_the_thresholds_and_logs_to_stderr_at_its_level() -> None:
    code = ("import gc, json, logging\n"
            "from apimachinery.process import start_component\n"
            "level = start_component(1)\n"
            "logging.getLogger('kubelet.kubelet').info('registered node %s', 'node01')\n"
            "logging.getLogger('kubelet.kubelet').debug('not shown at -v 1')\n"
            "print(json.dumps({'level': level, 'root': logging.getLogger().level, 'gc': gc.get_threshold()}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["level"] == got["root"] == logging.INFO and tuple(got["gc"]) == THRESHOLDS
    (line,) = done.stderr.splitlines()
    assert line.endswith(" INFO kubelet.kubelet: registered node node01"), line
