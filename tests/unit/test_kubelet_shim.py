"""kubelet.shim: its JSON without ``json``, and a start-up that loads no pure-Python module of the stdlib."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kubelet import shim
from kubelet.runtime import SHIM


@pytest.mark.parametrize("value", [
    {"pid": 1234},
    {"error": 'no such "file"\\dir\n\ttab', "errno": 2},
    {"finishedAt": "2024-01-01T00:00:00.000000Z", "exitCode": -9},
    {"error": "é ✓ 𝄞 \x00\x7f"},
])
def test_to_json_is_json(value: dict[str, int | str]) -> None:
    assert json.loads(shim.to_json(value)) == value


def test_the_shim_starts_without_json_or_enum() -> None:
    """What makes a container start cheap: the shim's imports are C modules only."""
    code = (f"import sys; path = {str(SHIM)!r}; exec(compile(open(path).read(), path, 'exec'), {{'__name__': 'x'}}); "
            "print(' '.join(m for m in ('json', 're', 'enum', 'signal') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
