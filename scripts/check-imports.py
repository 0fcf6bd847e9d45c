#!/usr/bin/env python3
"""Fails when a target imports a module of this package that Package.swift does not declare
as one of its dependencies, or declares one that none of its files imports.

    scripts/check-imports.py

The module edges are the architecture (ARCHITECTURE.md, "Layers"): an import that works only
because another target re-exports or happens to load a module hides an edge, and a declared
dependency nobody imports is an edge that is not there. Imports of modules that are not this
package's targets (Glibc, Synchronization, XCTest, ...) are not checked. A target in
`TEST_ONLY` is for test targets alone: any other target that depends on it would link
it into a product.
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Helpers for the test targets (Tests/TestSupport): never part of what ships.
TEST_ONLY = {"TestSupport"}
IMPORT = re.compile(r"^\s*(?:@[\w()]+\s+)*import\s+(?:(?:struct|class|enum|func|var|let|protocol|typealias)\s+)?(\w+)", re.M)


def main() -> int:
    dump = subprocess.run(
        ["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    package = json.loads(dump)
    targets = {t["name"]: t for t in package["targets"]}
    problems = []
    for name, target in sorted(targets.items()):
        if target["type"] == "system":
            continue
        declared = set()
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target"):
                if kind in dependency:
                    declared.add(dependency[kind][0])
        for module in sorted(declared & TEST_ONLY):
            if target["type"] != "test":
                problems.append(f"{name}: depends on {module}, which only test targets may")
        base = "Tests" if target["type"] == "test" else "Sources"
        directory = ROOT / (target.get("path") or f"{base}/{name}")
        imported = {}
        for source in sorted(directory.rglob("*.swift")):
            text = source.read_text(encoding="utf-8")
            for module in IMPORT.findall(text):
                if module in targets and module != name:
                    imported.setdefault(module, source.relative_to(ROOT))
        for module, source in sorted(imported.items()):
            if module not in declared:
                problems.append(f"{name}: imports {module} ({source}) but does not declare it")
        for module in sorted(declared - set(imported)):
            problems.append(f"{name}: declares {module} but no file of it imports it")
    for problem in problems:
        print(f"check-imports: {problem}", file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} edge(s) differ from Package.swift", file=sys.stderr)
        return 1
    print(f"check-imports: {len(targets)} targets, every import declared and every dependency imported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
