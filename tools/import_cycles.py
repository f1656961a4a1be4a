"""Count the import cycles between the repository's modules (issue #20's measure of the layering's health).

A cycle here is a strongly connected group of two or more modules in grimp's import graph (the graph
import-linter checks its contracts on). Counted with every import; at run time, without the imports made only for
type checking (``if TYPE_CHECKING:``), which cost nothing then; and the cycles that exist only through those
(issue #20 wants these alone left). ``-v`` lists each group's modules.

    .venv/bin/python tools/import_cycles.py [-v] [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("apimachinery", "kubeclient", "apiserver", "controllers", "scheduler", "kubelet", "clusterdns", "console",
            "proxy", "kubelab")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The graph's strongly connected components of two or more modules (Tarjan, iterative), largest first."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(edges[node])):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found, key=lambda g: (-len(g), g))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list each cycle's modules")
    parser.add_argument("--check", action="store_true", help="fail (exit 1) on any run-time cycle (make lint)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    # No cache: grimp's cache (shared with import-linter) can miss edits, and a stale count is worse than 5 s.
    every = cycles(grimp.build_graph(*PACKAGES, cache_dir=None))
    runtime = cycles(grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None))
    # A group of the full graph that holds no run-time cycle exists only through TYPE_CHECKING imports.
    type_only = [g for g in every if not any(set(r) <= set(g) for r in runtime)]
    for label, groups in (("all imports", every), ("at run time (without TYPE_CHECKING-only imports)", runtime),
                          ("made only by TYPE_CHECKING imports", type_only)):
        print(f"{label}: {len(groups)} import cycles over {sum(len(g) for g in groups)} modules")
        if args.verbose:
            for group in groups:
                print("   ", " ↔ ".join(group))
    if args.check and runtime:
        print("import cycles at run time: break them (a TYPE_CHECKING import, or the shared part in a module "
              "below both); -v lists them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
