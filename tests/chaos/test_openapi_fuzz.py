"""Schemathesis over the apiserver's own OpenAPI v3 (core/v1 and apps/v1): no request may end in a 5xx.

Schemathesis' coverage phase derives requests from each operation's schema — valid ones, and invalid ones built
from every constraint (each field of the wrong JSON type, ``null`` where an object or a list item belongs,
empty and huge values, odd characters in names and query parameters) — and its ``not_a_server_error`` check
fails on any 5xx or broken connection: bad input gets kube's 400/404/422 ``Status``, never a 500.

The apiserver and etcd are this module's own (the run deletes collections and cluster-scoped objects), and the
``{namespace}`` of every path is the namespace the test makes (support/openapi_fuzz.py says what else is trimmed
so that no request opens a stream). Deterministic and bounded:

* the coverage phase with ``--generation-deterministic`` derives the same requests, in the same order, every
  run (no seed involved);
* the suite's subset is every operation except the whole-object PUTs (``PUT .../{name}`` and ``.../status``):
  their bodies are the same types the POSTs send and they only ever meet a missing object (404) here, while
  they make two thirds of a full coverage run's requests (~25,500 of ~38,000); ``PUT .../scale`` stays;
* the operations are split between two schemathesis processes of one worker each (a worker thread each would
  trip CPython 3.11's "AST constructor recursion depth mismatch" when two threads parse Hypothesis' lambdas);
* each process has ``MAX_TIME`` seconds, which schemathesis shares between its operations (an operation gets
  the first of its cases that its share allows; one whose cases take longer than its share leaves less for
  those after it, and the last ones may be skipped, "Time limit reached"); each request stops after
  ``REQUEST_TIMEOUT``. A full coverage of the subset is ~12,500 requests. On this project's shared 2-core
  machine the two processes sent 3,800–10,250 of them and ran 68–124 of the 124 operations, depending on the
  load; each run's report is kept in ``run<i>/output.txt`` under the module's tmp dir.

``KUBELAB_FUZZ_FULL=1`` runs every operation, adds the fuzzing phase (Hypothesis' examples, derandomized by the
same flag, ten per operation) and allows half an hour.

Schemathesis runs as its CLI (``python -m schemathesis.cli run``): its pytest plugin renames the test node
through ``_nodeid``, which pytest 9 no longer has.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import api_only
from kubelab.api import Cluster
from support.openapi_fuzz import fuzz_document, operations, served_documents

pytestmark = pytest.mark.chaos

GROUP_VERSIONS = ["api/v1", "apis/apps/v1"]
FULL = os.environ.get("KUBELAB_FUZZ_FULL") == "1"
PROCESSES = 2
MAX_TIME = 1800 if FULL else 75
REQUEST_TIMEOUT = 30  # generous: a loaded machine is slow, a hung request is still caught
TESTED = re.compile(r"^\s*Tested: (\d+)", re.MULTILINE)  # the summary's count of operations run


def in_suite(method: str, path: str) -> bool:
    """The suite's subset (see the module docstring); everything with ``KUBELAB_FUZZ_FULL=1``."""
    return FULL or method != "put" or path.endswith("/scale")


@pytest.fixture(scope="module")
def fuzz_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    """An API-only cluster of the module's own: what the fuzzer writes stays out of the session's."""
    tmp = tmp_path_factory.mktemp("fuzz")
    with api_only() as server:
        yield server, tmp


def schemathesis_run(document: dict[str, object], url: str, workdir: Path) -> subprocess.Popen[str]:
    """One ``schemathesis run`` over ``document`` against ``url``, working (and writing) in ``workdir``."""
    workdir.mkdir()
    (workdir / "openapi.json").write_text(json.dumps(document))
    phases = ["coverage", "fuzzing"] if FULL else ["coverage"]
    command = [sys.executable, "-m", "schemathesis.cli", "run", "openapi.json", "--url", url,
               "--checks", "not_a_server_error", "--phases", ",".join(phases), "--generation-deterministic",
               "--max-examples", "10", "--workers", "1",
               "--request-timeout", str(REQUEST_TIMEOUT), "--max-time", str(MAX_TIME), "--no-color",
               "--suppress-health-check", "all"]
    return subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "120"})


def test_no_server_error(fuzz_apiserver: tuple[Cluster, Path]) -> None:
    apiserver, tmp = fuzz_apiserver
    namespace = f"fuzz-{uuid.uuid4().hex[:8]}"
    resp = httpx.post(f"{apiserver.api_url}/api/v1/namespaces", json={"metadata": {"name": namespace}})
    assert resp.status_code == 201, resp.text
    documents = served_documents(apiserver.api_url, GROUP_VERSIONS)
    selected = operations(fuzz_document(documents, namespace, in_suite))
    assert len(selected) > 100  # both group-versions are served and selected
    shares = [set(selected[i::PROCESSES]) for i in range(PROCESSES)]
    runs = [schemathesis_run(fuzz_document(documents, namespace, lambda m, p, share=share: (m, p) in share),
                             apiserver.api_url, tmp / f"run{i}") for i, share in enumerate(shares)]
    reports = []
    for i, run in enumerate(runs):
        try:
            output, _ = run.communicate(timeout=MAX_TIME + 60)
        except subprocess.TimeoutExpired:
            run.kill()
            output, _ = run.communicate()
        reports.append((run.returncode, output))
        (tmp / f"run{i}" / "output.txt").write_text(output)  # what was run, for a person to read
    failed = [output for code, output in reports if code != 0]
    assert not failed, "\n".join(failed) + f"\napiserver log: {apiserver.data_dir / 'logs' / 'apiserver.log'}"
    for _code, output in reports:  # each run ran (how far it got within MAX_TIME is in its output.txt)
        tested = TESTED.search(output)
        assert tested and int(tested.group(1)) > 0, output
