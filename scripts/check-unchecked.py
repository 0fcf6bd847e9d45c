#!/usr/bin/env python3
"""Fails when Sources/ holds an unchecked construct that ARCHITECTURE.md's "Unchecked code"
table does not list, or when the table lists one that is not there.

    scripts/check-unchecked.py            (run by `make lint`)
    scripts/check-unchecked.py --list     every construct found, one `file  declaration  kind`
    scripts/check-unchecked.py --self-test  the lint on small trees: passes, then fails as it must

Each is code the compiler no longer checks, kept because of a rule its row states (which thread
owns it, what outlives what) and because it measurably pays (bench/README.md). The kinds:

- `@exclusivity(unchecked)`, `nonisolated(unsafe)`, `unowned(unsafe)`: on a property, the
  property is the declaration; `unowned(unsafe)` in a capture list counts for the function (or
  property) that writes the closure.
- `Unmanaged`: every mention, for the declaration it is written in: the function, or the stored
  property whose type or observer names it. Every pointer that reaches C as a context
  (`toOpaque`, `passRetained`, `passUnretained`) is made this way.
- `unsafe pointer`: a pointer that may outlive the closure that lent it, which is
  - a stored property, or an enum case's payload, whose declared type names `UnsafePointer`,
    `UnsafeMutablePointer`, `UnsafeRawPointer`, `UnsafeMutableRawPointer`, their `Buffer`
    forms or `OpaquePointer`, outside a function type (a closure that takes a pointer holds
    none); computed properties hold nothing and do not count;
  - or a `withUnsafe…` closure whose whole result is its pointer or that pointer's
    `baseAddress` (`{ $0 }`, `{ p in p.baseAddress! }`): it hands the pointer out of the call.
  What the lint cannot see, and review must: a pointer carried out of its closure inside a
  larger value (a tuple, a struct of our own that is not a stored property of a type), or one a
  C function keeps beyond the call (pass it through a stored property or `Unmanaged`, so that
  it is listed). A pointer that lives only inside its `withUnsafe…` closure, or is a
  function's parameter, does not escape and is not listed.

A construct is keyed by its file (under Sources/), its declaration (`Type.member`, nested types
joined by dots; `Type.init`; a top-level function by its name) and its kind, so the table
survives moved lines. A row of the table names the kind in its first cell, the file and the
declarations as backticked words in its second: `Module/File.swift`, `Type.member`, ...
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE_HEADING = "## Unchecked code"

KINDS = ("@exclusivity(unchecked)", "nonisolated(unsafe)", "unowned(unsafe)", "Unmanaged", "unsafe pointer")
POINTER = re.compile(r"\b(?:Unsafe(?:Mutable)?(?:Raw)?(?:Buffer)?Pointer|OpaquePointer)\b")
TYPE_DECL = re.compile(
    r"(?:^|[\s;])(?:class|struct|enum|extension|protocol|actor)\s+([A-Za-z_][\w.]*)")
MEMBER_DECL = re.compile(r"(?<![.\w])(func\s+([A-Za-z_]\w*|[^\s(<]+)|init|deinit|subscript|(?:var|let)\s+([A-Za-z_]\w*))")
LOCAL_TYPE = re.compile(r"(?:^|\n)[^\n]*?\b(?:class|struct|enum|actor)\s+([A-Za-z_]\w*)[^\n]*$")
WITH_UNSAFE_RESULT = re.compile(
    r"\bwithUnsafe\w*\s*(?:\((?:[^()]|\([^()]*\))*?\)\s*)?\(?\s*\{\s*(?:([A-Za-z_]\w*)\s+in\s+)?"
    r"(\$0|\w+)(?:\.baseAddress!?)?\s*\}")


def scrub(text: str) -> str:
    """The text with comments and the contents of string literals blanked (newlines kept, so
    offsets and line numbers stay), interpolations kept as code."""
    out = list(text)
    i, n = 0, len(text)
    # Each entry: ("code", paren depth at which the interpolation closes) or a string's
    # ("str", closing delimiter, pound count, multiline).
    stack: list[tuple] = [("code", -1)]
    parens = 0

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        top = stack[-1]
        c = text[i]
        if top[0] == "code":
            if text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                blank(i, j)
                i = j
                continue
            if text.startswith("/*", i):
                depth, j = 1, i + 2
                while j < n and depth:
                    if text.startswith("/*", j):
                        depth, j = depth + 1, j + 2
                    elif text.startswith("*/", j):
                        depth, j = depth - 1, j + 2
                    else:
                        j += 1
                blank(i, j)
                i = j
                continue
            m = re.compile(r'(#*)("""|")').match(text, i)
            if m and (m.group(1) or c == '"'):
                pounds, quote = len(m.group(1)), m.group(2)
                stack.append(("str", quote + "#" * pounds, pounds, quote == '"""'))
                i = m.end()
                continue
            if c == "(":
                parens += 1
            elif c == ")":
                parens -= 1
                if len(stack) > 1 and parens == top[1]:
                    stack.pop()
                    i += 1
                    continue
            i += 1
            continue
        _, closing, pounds, _multiline = top
        if text.startswith(closing, i):
            stack.pop()
            i += len(closing)
            continue
        escape = "\\" + "#" * pounds
        if text.startswith(escape, i):
            after = i + len(escape)
            if after < n and text[after] == "(":
                blank(i, after)
                stack.append(("code", parens))
                parens += 1
                i = after + 1
                continue
            blank(i, min(after + 1, n))
            i = after + 1
            continue
        if c != "\n":
            out[i] = " "
        i += 1
    return "".join(out)


class Scope:
    def __init__(self, start, kind, name, parent):
        self.start, self.end, self.kind, self.name, self.parent = start, None, kind, name, parent

    def path(self) -> list[str]:
        names, scope = [], self
        while scope:
            if scope.name:
                names.append(scope.name)
            scope = scope.parent
        return names[::-1]

    def in_body(self) -> bool:
        """Inside a function's or a property's body (or a closure at the top level)."""
        scope = self
        while scope:
            if scope.kind == "type":
                return False
            if scope.kind in ("body", "file"):
                return scope.kind == "body"
            scope = scope.parent
        return False


def scopes(code: str) -> list[Scope]:
    """Every brace block of the scrubbed text: a type, a member's body, or an anonymous block
    (a closure, a statement's) that belongs to what encloses it."""
    root = Scope(0, "file", None, None)
    root.end = len(code)
    found, stack = [root], [(root, "", 0)]
    head, parens = "", 0
    for i, c in enumerate(code):
        if c == "(":
            parens += 1
        elif c == ")":
            parens -= 1
        if c == "{":
            parent = stack[-1][0]
            kind, name = "block", None
            if parens == stack[-1][2]:
                if parent.in_body():
                    local = LOCAL_TYPE.search(head)
                    if local:
                        kind, name = "type", local.group(1)
                else:
                    kind, name = classify(head)
            scope = Scope(i, kind, name, parent)
            found.append(scope)
            stack.append((scope, head, parens))
            head = ""
        elif c == "}":
            scope, saved, opened_at = stack.pop()
            scope.end = i
            # A block inside parentheses or in an expression continues its statement.
            head = saved + "{}" if scope.kind == "block" else ""
        elif c == ";" and parens == stack[-1][2]:
            head = ""
        else:
            head += c
    return found


def classify(head: str) -> tuple[str, str | None]:
    """What a brace opened outside any body begins, from the text before it."""
    last_type = None
    for m in TYPE_DECL.finditer(head):
        last_type = m
    last_member = None
    for m in MEMBER_DECL.finditer(head):
        last_member = m
    if last_type and (not last_member or last_type.start() > last_member.start()):
        return "type", re.split(r"[<:]", last_type.group(1))[0]
    if last_member:
        word = last_member.group(1)
        if word.startswith("func"):
            return "body", last_member.group(2)
        if word in ("init", "deinit", "subscript"):
            return "body", word
        return "body", last_member.group(3)
    return "block", None


def innermost(found: list[Scope], at: int) -> Scope:
    best = found[0]
    for scope in found:
        if scope.start < at <= scope.end and scope.start >= best.start:
            best = scope
    return best


def owner(scope: Scope) -> Scope:
    """The named scope a position belongs to: anonymous blocks belong to what encloses them."""
    while scope.kind == "block" and scope.parent:
        scope = scope.parent
    return scope


def statement_start(code: str, at: int) -> int:
    """Where the declaration around `at` starts: after the last brace or semicolon before it
    that is not inside parentheses, brackets or angle brackets."""
    depth, i = 0, at - 1
    while i >= 0:
        c = code[i]
        if c in ")>]":
            depth += 1
        elif c in "(<[":
            depth = max(depth - 1, 0)
        elif depth == 0 and c in "{};":
            return i + 1
        i -= 1
    return 0


DECLARED = re.compile(
    r"(?<![.\w])(?:(?:var|let|case)\s+([A-Za-z_]\w*)|func\s+([A-Za-z_]\w*)|(init|subscript)\b)")
ATTRIBUTED = re.compile(r"\s*(?:[@\w]+(?:\([\w\s,]*\))?\s+)*?(?:var|let)\s+([A-Za-z_]\w*)")


def declaration(found, code, at, follow: bool) -> str:
    """The declaration the construct at `at` belongs to. With `follow` (an attribute), the
    property it marks."""
    scope = owner(innermost(found, at))
    path = scope.path()
    if scope.kind in ("type", "file"):
        m = ATTRIBUTED.match(code, at + len(code[at:].split(None, 1)[0])) if follow else None
        if m:
            return ".".join(path + [m.group(1)])
        last = None
        for last in DECLARED.finditer(code, statement_start(code, at), at):
            pass
        if last:
            return ".".join(path + [next(g for g in last.groups() if g)])
    return ".".join(path) or "(file)"


def stored_pointer_properties(found, code):
    pattern = re.compile(r"(?<![.\w])(var|let|case)\s+([A-Za-z_]\w*)\s*(:|\()")
    for m in pattern.finditer(code):
        scope = owner(innermost(found, m.start()))
        if scope.kind != "type" and not (scope.kind == "file" and m.group(1) != "case"):
            continue
        if m.group(3) == "(":
            if m.group(1) != "case":
                continue
            end = matching(code, m.end() - 1)
            declared = code[m.end():end]
        else:
            if m.group(1) == "case":
                continue
            stop = re.compile(r"[={\n]").search(code, m.end())
            end = stop.start() if stop else len(code)
            declared = code[m.end():end]
            if stop and stop.group() == "{":
                body = code[end + 1:end + 200].lstrip()
                if not body.startswith(("didSet", "willSet")):
                    continue  # computed: it holds nothing
        if "->" in declared or not POINTER.search(declared):
            continue
        yield m.start(), ".".join(scope.path() + [m.group(2)])


def matching(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def constructs(path: pathlib.Path, sources: pathlib.Path) -> dict[tuple[str, str, str], int]:
    """Every construct of the file, keyed, with the line of its first occurrence."""
    rel = str(path.relative_to(sources))
    code = scrub(path.read_text(encoding="utf-8"))
    found = scopes(code)
    keys: dict[tuple[str, str, str], int] = {}

    def add(at: int, name: str, kind: str) -> None:
        keys.setdefault((rel, name, kind), code.count("\n", 0, at) + 1)

    for attribute in ("@exclusivity(unchecked)", "nonisolated(unsafe)", "unowned(unsafe)"):
        for m in re.finditer(re.escape(attribute), code):
            add(m.start(), declaration(found, code, m.start(), follow=True), attribute)
    for m in re.finditer(r"\bUnmanaged\b", code):
        add(m.start(), declaration(found, code, m.start(), follow=False), "Unmanaged")
    for at, name in stored_pointer_properties(found, code):
        add(at, name, "unsafe pointer")
    for m in WITH_UNSAFE_RESULT.finditer(code):
        if m.group(2) == "$0" or m.group(2) == m.group(1):
            add(m.start(), declaration(found, code, m.start(), follow=False), "unsafe pointer")
    return keys


def table(text: str) -> tuple[set[tuple[str, str, str]], list[str]]:
    """The constructs the "Unchecked code" section's table lists, and its malformed rows."""
    start = text.find("\n" + TABLE_HEADING + "\n")
    if start < 0:
        return set(), [f"ARCHITECTURE.md has no '{TABLE_HEADING}' section"]
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    listed, problems = set(), []
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        kind = cells[0].replace("`", "")
        words = re.findall(r"`([^`]+)`", cells[1]) if len(cells) > 1 else []
        files = [w for w in words if w.endswith(".swift")]
        if kind not in KINDS or len(files) != 1 or len(words) < 2:
            problems.append(f"ARCHITECTURE.md: a row of '{TABLE_HEADING}' needs a kind of {KINDS} "
                            f"and `File.swift` `Declaration`...: {row[:100]}")
            continue
        for name in words:
            if name != files[0]:
                listed.add((files[0], name, kind))
    return listed, problems


def check(root: pathlib.Path, listing: bool = False) -> list[str]:
    """The problems of the tree at `root` (or, with `listing`, every construct found)."""
    sources = root / "Sources"
    found: dict[tuple[str, str, str], int] = {}
    for path in sorted(sources.rglob("*.swift")):
        found |= constructs(path, sources)
    if listing:
        return [f"{rel}  {name}  {kind}" for rel, name, kind in sorted(found)]
    listed, problems = table((root / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    for key in sorted(found.keys() - listed):
        rel, name, kind = key
        problems.append(f"Sources/{rel}:{found[key]}: {kind} in {name} is not in ARCHITECTURE.md's "
                        f"'{TABLE_HEADING}' table: add it to a row (the rule that makes it safe, "
                        "what it measurably buys) or use the checked form")
    for rel, name, kind in sorted(listed - found.keys()):
        problems.append(f"ARCHITECTURE.md's '{TABLE_HEADING}' lists {kind} in {name} "
                        f"(Sources/{rel}), which is not there: update the row")
    return problems


SELF_TEST_SOURCE = """\
final class Conn {
  // Not `@exclusivity(unchecked)` in a comment, nor in "a string: unowned(unsafe)".
  @exclusivity(unchecked) private var state = 0
  private let ctx: OpaquePointer
  var computed: UnsafeRawPointer { UnsafeRawPointer(ctx) }
  let callback: (UnsafeRawPointer) -> Void
  func hand() {
    let box = Unmanaged.passRetained(self).toOpaque()
    run { [unowned(unsafe) self] in self.state += 1 }
    _ = box
  }
  func leak(_ a: [UInt8]) -> UnsafePointer<UInt8> { a.withUnsafeBufferPointer { $0.baseAddress! } }
}
"""
SELF_TEST_ROWS = [
    "| `@exclusivity(unchecked)` | `M/Conn.swift` `Conn.state` | rule | buys |",
    "| unsafe pointer | `M/Conn.swift` `Conn.ctx`, `Conn.leak` | rule | buys |",
    "| `Unmanaged` | `M/Conn.swift` `Conn.hand` | rule | buys |",
    "| `unowned(unsafe)` | `M/Conn.swift` `Conn.hand` | rule | buys |",
]


def self_test() -> int:
    """Runs the lint on small trees: it must pass on a complete table and fail on an unlisted
    construct, a stale row and a malformed row."""
    import tempfile

    def run(source: str, rows: list[str]) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "Sources" / "M").mkdir(parents=True)
            (root / "Sources" / "M" / "Conn.swift").write_text(source)
            head = ["# A", "", TABLE_HEADING, "", "| kind | where | rule | buys |", "|-|-|-|-|"]
            (root / "ARCHITECTURE.md").write_text("\n".join(head + rows + ["", "## Next", ""]))
            return check(root)

    failures = []

    def expect(name: str, problems: list[str], wanted: str | None) -> None:
        ok = not problems if wanted is None else any(wanted in p for p in problems)
        if not ok:
            failures.append(f"self-test '{name}': expected {wanted or 'no problem'}, got {problems}")

    expect("complete table", run(SELF_TEST_SOURCE, SELF_TEST_ROWS), None)
    expect("unlisted construct", run(SELF_TEST_SOURCE + "nonisolated(unsafe) var g = 0\n", SELF_TEST_ROWS),
           "nonisolated(unsafe) in g is not in")
    expect("unlisted pointer", run(SELF_TEST_SOURCE.replace("let callback", "var raw: UnsafeMutableRawPointer?\n  let callback"),
                                   SELF_TEST_ROWS), "unsafe pointer in Conn.raw is not in")
    expect("stale row", run(SELF_TEST_SOURCE.replace("@exclusivity(unchecked) ", ""), SELF_TEST_ROWS),
           "lists @exclusivity(unchecked) in Conn.state (Sources/M/Conn.swift), which is not there")
    expect("malformed row", run(SELF_TEST_SOURCE, SELF_TEST_ROWS + ["| unsafe | `Conn.x` | rule | buys |"]),
           "needs a kind")
    expect("empty table", run(SELF_TEST_SOURCE, []), "unowned(unsafe) in Conn.hand is not in")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


def main() -> int:
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if args == ["--list"]:
        print("\n".join(check(ROOT, listing=True)))
        return 0
    if args:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(ROOT)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
