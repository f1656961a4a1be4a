"""What every component's ``main`` does first: the cyclic collector's thresholds (``gcpolicy``), set before
anything is decoded or stored, and logging to stderr at the verbosity ``-v`` asks for (klog's levels as Python's:
0 warnings and errors, 1 also info, 2 and more also debug), one line per record with time, level and logger."""

from __future__ import annotations

import logging
import sys

from apimachinery.gcpolicy import configure_gc

__all__ = ["LOG_FORMAT", "log_level", "start_component"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_level(verbosity: int) -> int:
    """The Python logging level of ``-v verbosity``."""
    return logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG


def start_component(verbosity: int) -> int:
    """Set the collector's thresholds and the root logger; the level set."""
    configure_gc()
    level = log_level(verbosity)
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    return level
