#!/usr/bin/env python3
"""Fails when a Swift source file is over 400 lines or a function body over 60 lines.

    scripts/check-size.py [DIR...]      default: Sources

Long files hide more than one responsibility and long functions more than one step; the limits
are the project's (ARCHITECTURE.md, "Habits"). A function is a `func`, `init`, `deinit`,
accessor-free `subscript` or closure-valued property is not counted: only declarations that
start with one of those keywords (after attributes and modifiers). Its length is counted from
the declaration line to its closing brace, found by brace depth with strings, characters and
comments skipped.
"""
import pathlib
import re
import sys

FILE_LIMIT = 400
FUNCTION_LIMIT = 60
DECLARATION = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|open|static|"
    r"class|final|override|mutating|nonmutating|convenience|required|nonisolated|"
    r"private\(set\)|internal\(set\)|public\(set\))\s+)*(func|init|deinit|subscript)\b")


def strip(line: str, state: dict) -> str:
    """The line without string literals and comments; `state` carries multi-line ones."""
    out = []
    i = 0
    while i < len(line):
        if state.get("block"):
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"] = False
            i = end + 2
            continue
        if state.get("multiline"):
            end = line.find('"""', i)
            if end < 0:
                return "".join(out)
            state["multiline"] = False
            i = end + 3
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if line.startswith('"""', i):
            state["multiline"] = True
            i += 3
            continue
        if c == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


NEXT_DECLARATION = re.compile(
    r"^\s*(?:}|@|func\b|init\b|var\b|let\b|case\b|static\b|public\b|private\b|internal\b|"
    r"package\b|mutating\b|associatedtype\b|typealias\b|subscript\b|#)")


def body_start(code: list[str], start: int) -> tuple[int, int] | None:
    """Where the body of the declaration on line `start` opens (line, depth before it), or None
    for a declaration without a body (a protocol requirement)."""
    parens = 0
    for number in range(start, len(code)):
        line = code[number]
        if number > start and parens == 0 and NEXT_DECLARATION.match(line):
            return None
        for c in line:
            if c in "([":
                parens += 1
            elif c in ")]":
                parens -= 1
            elif c == "{" and parens == 0:
                return number
    return None


def check(path: pathlib.Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    problems = []
    if len(lines) > FILE_LIMIT:
        problems.append(f"{path}: {len(lines)} lines (limit {FILE_LIMIT})")
    state: dict = {}
    code = [strip(line, state) for line in lines]
    # The brace depth at the start of every line.
    depth_at = []
    depth = 0
    for line in code:
        depth_at.append(depth)
        depth += line.count("{") - line.count("}")
    for number, line in enumerate(code):
        if not DECLARATION.match(line):
            continue
        opening = body_start(code, number)
        if opening is None:
            continue
        # The body closes where the depth falls back to what it was before its brace.
        before = depth_at[opening] + code[opening][: code[opening].index("{")].count("{") - code[
            opening][: code[opening].index("{")].count("}")
        level = before
        end = None
        for k in range(opening, len(code)):
            segment = code[k][code[k].index("{"):] if k == opening else code[k]
            for c in segment:
                if c == "{":
                    level += 1
                elif c == "}":
                    level -= 1
                    if level == before:
                        end = k
                        break
            if end is not None:
                break
        length = (end if end is not None else len(code) - 1) - number + 1
        if length > FUNCTION_LIMIT:
            problems.append(
                f"{path}:{number + 1}: function of {length} lines (limit {FUNCTION_LIMIT}): "
                + lines[number].strip()[:70])
    return problems


def main() -> int:
    roots = [pathlib.Path(a) for a in sys.argv[1:]] or [pathlib.Path("Sources")]
    problems = []
    for root in roots:
        for path in sorted(root.rglob("*.swift")):
            problems += check(path)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-size: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
