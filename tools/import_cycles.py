"""Count the import cycles between the repository's modules (issue #20's measure of the layering's health).

A cycle here is a strongly connected group of two or more modules in grimp's import graph (the graph
import-linter checks its contracts on). Printed twice: with every import, and without the imports made only for
type checking (``if TYPE_CHECKING:``), which cost nothing at run time. ``-v`` lists each group's modules.

    .venv/bin/python tools/import_cycles.py [-v]
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
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    for label, exclude in (("all imports", False), ("without TYPE_CHECKING-only imports", True)):
        graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=exclude)
        groups = cycles(graph)
        print(f"{label}: {len(groups)} import cycles over {sum(len(g) for g in groups)} modules")
        if args.verbose:
            for group in groups:
                print("   ", " ↔ ".join(group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
