#!/usr/bin/env python3
"""Checks that the folders of Sources/OAuth2 use each other only as the
README's architecture table says.

The rule is one table, in README.md under "Architecture": the one whose
columns include `folder` and `may use`. Each row names a folder and, in
backticks, the folders its files may use; a file may use what its own
folder declares and what those folders declare, nothing else (no path
through a third folder: every edge is written down). The table must name
every folder of Sources/OAuth2 and be a DAG: a cycle fails the check. An
edge the table allows but no file uses fails it too, so that the table is
the graph the code has, not an older one.

What a folder declares, and so what counts as using it:
- its top-level types, typealiases, functions and constants;
- what it adds in an extension of another folder's type or of an outside
  type (`extension EndpointPolicy { static func requireSecure }`,
  `extension URL { var redactingQuery }`), members and nested types alike.
A use is such a name in code: capitalised or not, after a dot or bare, in a
generic parameter, a constraint, an attribute or a string interpolation.
Comments and the text of string literals are not code. A name that another
folder declares too, in any way (its own, a member, a local, a parameter),
cannot be told apart by name alone and is not counted: what the check
reports is a use, and what it misses is such a shared name (or an outside
library's member spelled like one of ours, which it cannot see).

Prints each violation as `file:line: Folder uses name (Other)` and exits 1
when there is any. `--graph` prints the rows as the code has them (what to
write in the table after a change); `--self-test` runs the check on small
fixtures in a temporary directory and shows that it catches what it must;
`--root DIR` checks another checkout.
"""
import bisect
import io
import pathlib
import re
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
SOURCES = pathlib.Path("Sources") / "OAuth2"

KEYWORDS = set(
    """associatedtype class deinit enum extension fileprivate func import init inout internal let open operator
    private precedencegroup protocol public rethrows static struct subscript typealias var break case catch continue
    default defer do else fallthrough for guard if in repeat return throw switch where while as Any await false is nil
    self Self super throws true try async package actor some any consuming borrowing nonisolated isolated lazy weak
    unowned mutating nonmutating override final required convenience dynamic indirect optional get set willSet didSet
    macro""".split()
)
TYPE_KEYWORDS = {"struct", "enum", "class", "protocol", "actor", "typealias", "associatedtype", "macro"}
VALUE_KEYWORDS = {"func", "var", "let", "case"}
DECLARING = TYPE_KEYWORDS | VALUE_KEYWORDS
# The keywords whose block's kind the `{` after them takes.
BLOCK_KEYWORDS = TYPE_KEYWORDS | VALUE_KEYWORDS | {"extension", "init", "deinit", "subscript"}
TOKEN = re.compile(r"`?[A-Za-z_][A-Za-z0-9_]*`?|[^\sA-Za-z0-9_]")


# MARK: - Reading Swift


def mask(text):
    """The text with comments and the text of string literals blanked out
    (newlines kept, so line numbers hold); string interpolations stay code."""
    out = list(text)
    n = len(text)
    i = 0
    # The strings an interpolation is inside: (hashes, multiline, open parentheses).
    stack = []
    parens = 0

    def blank(start, end):
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "#" or c == '"':
            j = i
            while j < n and text[j] == "#":
                j += 1
            if j >= n or text[j] != '"':
                i = j if j > i else i + 1
                continue
            hashes = j - i
            multiline = text.startswith('"""', j)
            j += 3 if multiline else 1
            blank(i, j)
            i = string_body(text, j, hashes, multiline, blank)
            if i < 0:  # an interpolation starts: code until its `)`
                i = -i
                stack.append((hashes, multiline, parens))
                parens = 0
        elif c == "(":
            parens += 1
            i += 1
        elif c == ")":
            if parens == 0 and stack:
                hashes, multiline, parens = stack.pop()
                blank(i, i + 1)
                i = string_body(text, i + 1, hashes, multiline, blank)
                if i < 0:
                    i = -i
                    stack.append((hashes, multiline, parens))
                    parens = 0
            else:
                parens = max(0, parens - 1)
                i += 1
        else:
            i += 1
    return "".join(out)


def string_body(text, i, hashes, multiline, blank):
    """Blanks a string literal's text from `i`; returns the index after its
    end, or minus the index after an interpolation's `\\(`."""
    n = len(text)
    close = ('"""' if multiline else '"') + "#" * hashes
    escape = "\\" + "#" * hashes
    start = i
    while i < n:
        if text.startswith(escape, i):
            j = i + len(escape)
            if j < n and text[j] == "(":
                blank(start, j + 1)
                return -(j + 1)
            i = j + 1
        elif text.startswith(close, i):
            blank(start, i + len(close))
            return i + len(close)
        elif text[i] == "\n" and not multiline:
            break
        else:
            i += 1
    blank(start, i)
    return i


class Token:
    __slots__ = ("text", "line")

    def __init__(self, text, line):
        self.text = text.strip("`")
        self.line = line

    @property
    def is_name(self):
        return (self.text[0].isalpha() or self.text[0] == "_") and self.text not in KEYWORDS and self.text != "_"


def tokens(text):
    code = mask(text)
    starts = [0] + [m.end() for m in re.finditer("\n", code)]
    return [Token(m.group(0), bisect.bisect_right(starts, m.start())) for m in TOKEN.finditer(code)]


class Declaration:
    """A name declared in a file, and where: `scope` is "top" (top level),
    "extension" (a member or nested type of an extension of the type named
    `extends`), "member" (inside a type's own body) or "local" (locals,
    parameters, generic parameters)."""

    __slots__ = ("name", "scope", "extends")

    def __init__(self, name, scope, extends=None):
        self.name, self.scope, self.extends = name, scope, extends


def declarations(toks):
    """The names a file declares (`toks`, from ``tokens``), as Declarations."""
    found = []
    frames = []  # per open `{`: ("type", Name), ("extension", Name) or ("other", None)
    header = []  # the tokens since the last `{`, `}` or `;`
    count = len(toks)

    def scope():
        if not frames:
            return "top", None
        if len(frames) == 1 and frames[0][0] == "extension":
            return "extension", frames[0][1]
        if all(kind == "type" or kind == "extension" for kind, _ in frames):
            return "member", None
        return "local", None

    def add(name, where=None):
        kind, extends = where or scope()
        found.append(Declaration(name, kind, extends))

    def parameters(k):
        """Records the parameter names of the list opening at `k` (a `(`)."""
        depth = 0
        while k < count:
            t = toks[k].text
            if t in ("(", "["):
                depth += 1
            elif t in (")", "]"):
                depth -= 1
                if depth == 0:
                    return
            elif depth == 1 and t == ":" and toks[k - 1].is_name:
                found.append(Declaration(toks[k - 1].text, "local"))
            k += 1

    def generics(k):
        """Records the generic parameters of the clause opening at `k` (a `<`); returns the index after it."""
        depth = 0
        while k < count:
            t = toks[k].text
            if t == "<":
                depth += 1
            elif t == ">":
                depth -= 1
                if depth == 0:
                    return k + 1
            elif depth == 1 and toks[k].is_name and toks[k - 1].text in ("<", ","):
                found.append(Declaration(t, "local"))
            k += 1
        return k

    for k, tok in enumerate(toks):
        t = tok.text
        nxt = toks[k + 1] if k + 1 < count else None
        if t == "{":
            kind = "other"
            name = None
            for h in range(len(header) - 1, -1, -1):
                word = header[h].text
                if word in BLOCK_KEYWORDS:
                    after = header[h + 1] if h + 1 < len(header) else None
                    if word == "extension" and after is not None:
                        kind, name = "extension", after.text
                    elif word in TYPE_KEYWORDS and after is not None and after.is_name:
                        kind, name = "type", after.text
                    break
            frames.append((kind, name))
            header = []
            closure_parameters(toks, k, found)
            continue
        if t == "}":
            if frames:
                frames.pop()
            header = []
            continue
        if t == ";":
            header = []
            continue
        header.append(tok)
        if nxt is None:
            continue
        if t in DECLARING and nxt.is_name:
            if t == "case" and not (frames and frames[-1][0] == "type"):
                continue  # a pattern of `switch`, not an enum's case
            add(nxt.text)
            if t == "case":
                j, depth = k + 2, 0
                while j + 1 < count and toks[j].line == tok.line:
                    depth += (toks[j].text == "(") - (toks[j].text == ")")
                    if depth == 0 and toks[j].text == "," and toks[j + 1].is_name:
                        add(toks[j + 1].text)
                    j += 1
            if t == "func" or t in TYPE_KEYWORDS:
                j = k + 2
                if j < count and toks[j].text == "<":
                    j = generics(j)
                if t == "func" and j < count and toks[j].text == "(":
                    parameters(j)
        elif t in ("var", "let") and nxt.text == "(":
            parameters_of_tuple(toks, k + 1, found)
        elif t == "func":  # an operator: `static func == (lhs: T, rhs: T)`
            j = k + 1
            while j < min(k + 5, count) and toks[j].text != "(":
                j += 1
            if j < count and toks[j].text == "(":
                parameters(j)
        elif t in ("init", "subscript") and (k == 0 or toks[k - 1].text != "."):
            j = k + 1
            if toks[j].text in ("?", "!"):
                j += 1
            if j < count and toks[j].text == "<":
                j = generics(j)
            if j < count and toks[j].text == "(":
                parameters(j)
        elif t == "for":
            j = k + 1
            while j < count and toks[j].text not in ("in", "{"):
                if toks[j].is_name and not toks[j].text[0].isupper():
                    found.append(Declaration(toks[j].text, "local"))
                j += 1
    return found


def parameters_of_tuple(toks, k, found):
    """`let (a, b) = …`: records `a` and `b`."""
    depth = 0
    while k < len(toks):
        t = toks[k].text
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                return
        elif toks[k].is_name:
            found.append(Declaration(t, "local"))
        k += 1


def closure_parameters(toks, k, found):
    """`{ a, b in` or `{ (a: T) -> U in` after the `{` at `k`: records the parameter names."""
    names = []
    for j in range(k + 1, min(k + 40, len(toks))):
        t = toks[j].text
        if t == "in":
            found.extend(Declaration(name, "local") for name in names)
            return
        if t in ("{", "}", "=", ";") or (t in KEYWORDS and t not in ("inout", "throws", "async", "some", "any")):
            return
        if toks[j].is_name and not t[0].isupper():
            names.append(t)


def uses(toks):
    """(token, name) for each name the code uses, leaving out the names a
    declaration introduces, argument labels and imported module names."""
    count = len(toks)
    for k, tok in enumerate(toks):
        if not tok.is_name:
            continue
        before = toks[k - 1].text if k else ""
        after = toks[k + 1].text if k + 1 < count else ""
        if before in DECLARING or before == "import":
            continue
        labelled = k + 2 < count and toks[k + 1].is_name and toks[k + 2].text == ":"
        if before in ("(", ",") and (after == ":" or labelled):
            continue  # an argument label, or a parameter's label or name
        yield tok


# MARK: - The table


class TableError(Exception):
    pass


def read_table(readme):
    """The `folder | … | may use` table of the README's architecture section, as {folder: [folders]}."""
    text = readme.read_text()
    section = re.search(r"^## Architecture\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not section:
        raise TableError(f"{readme}: no '## Architecture' section")
    rows = [line.strip() for line in section.group(1).split("\n") if line.strip().startswith("|")]
    header_index = None
    for index, row in enumerate(rows):
        cells = [cell.strip().lower() for cell in row.strip("|").split("|")]
        if "folder" in cells and "may use" in cells:
            header_index = index
            folder_column, uses_column = cells.index("folder"), cells.index("may use")
            break
    if header_index is None:
        raise TableError(f"{readme}: the architecture section has no table with the columns 'folder' and 'may use'")
    table = {}
    for row in rows[header_index + 2 :]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if len(cells) <= max(folder_column, uses_column):
            break
        folder = cells[folder_column].strip("`")
        if folder in table:
            raise TableError(f"{readme}: folder {folder} has two rows")
        table[folder] = re.findall(r"`(\w+)`", cells[uses_column])
    for folder, allowed in table.items():
        for other in allowed:
            if other not in table:
                raise TableError(f"{readme}: {folder} may use {other}, which has no row")
    cycle = find_cycle(table)
    if cycle:
        raise TableError(f"{readme}: the table has a cycle: " + " → ".join(cycle) + " (it must be a DAG)")
    return table


def find_cycle(table):
    """A path of folders that comes back to its start, or None."""
    state = {}

    def visit(folder, path):
        state[folder] = "open"
        for other in table[folder]:
            if state.get(other) == "open":
                return path[path.index(other) :] + [other]
            if other not in state:
                found = visit(other, path + [other])
                if found:
                    return found
        state[folder] = "done"
        return None

    for folder in table:
        if folder not in state:
            found = visit(folder, [folder])
            if found:
                return found
    return None


# MARK: - The check


def analyse(sources_root):
    """The Swift files under `sources_root` as (path, folder, tokens), and
    the names a folder owns, as {name: folder}."""
    files = []
    for path in sorted(sources_root.rglob("*.swift")):
        folder = path.relative_to(sources_root).parts[0]
        files.append((path, folder, tokens(path.read_text())))
    found = [(folder, d) for _, folder, toks in files for d in declarations(toks)]
    top_level = {}
    for folder, d in found:
        if d.scope == "top":
            top_level.setdefault(d.name, folder)
    exported, declared_in = {}, {}
    for folder, d in found:
        declared_in.setdefault(d.name, set()).add(folder)
        home = top_level.get(d.extends.split(".")[0]) if d.scope == "extension" else None
        if d.scope == "top" or (d.scope == "extension" and home != folder):
            exported.setdefault(d.name, set()).add(folder)
    owner = {}
    for name, folders in exported.items():
        if len(folders) == 1 and declared_in[name] == folders:
            owner[name] = next(iter(folders))
    return files, owner


def edges(files, owner):
    """Each use of another folder's name, as (path, folder, token, other folder)."""
    for path, folder, toks in files:
        for tok in uses(toks):
            other = owner.get(tok.text)
            if other is not None and other != folder:
                yield path, folder, tok, other


def check(root, out=sys.stdout, err=sys.stderr):
    """Checks the tree at `root` against its README's table; returns the number of problems found."""
    try:
        table = read_table(root / "README.md")
    except TableError as error:
        print(f"check-layers: {error}", file=err)
        return 1
    files, owner = analyse(root / SOURCES)
    present = {folder for _, folder, _ in files}
    for folder in sorted(present - table.keys()):
        print(f"check-layers: {SOURCES / folder} has no row in the README's architecture table", file=err)
    for folder in sorted(table.keys() - present):
        print(f"check-layers: the README's architecture table has a row for {folder}, which holds no file", file=err)
    if present != table.keys():
        return 1
    problems = 0
    used = set()
    reported = set()
    for path, folder, tok, other in edges(files, owner):
        used.add((folder, other))
        if other not in table[folder] and (path, tok.line, tok.text) not in reported:
            reported.add((path, tok.line, tok.text))
            print(f"{path.relative_to(root)}:{tok.line}: {folder} uses {tok.text} ({other})", file=out)
            problems += 1
    for folder, allowed in table.items():
        for other in allowed:
            if (folder, other) not in used:
                print(f"README.md: {folder} may use {other}, but nothing in {folder} does: take it out", file=out)
                problems += 1
    out.flush()  # the findings, then the summary, when both streams go to one place
    if problems:
        print(f"check-layers: {problems} problem(s) against the README's architecture table", file=err)
    else:
        count = sum(len(allowed) for allowed in table.values())
        print(f"check-layers: {len(files)} files, {len(table)} folders, {count} edges, as the README's table says", file=out)
    return problems


def graph(root):
    """Prints each folder's row as the code has it, lowest first: what the table should say."""
    files, owner = analyse(root / SOURCES)
    used = {}
    for _, folder, _, other in edges(files, owner):
        used.setdefault(folder, set()).add(other)
    try:
        known = list(read_table(root / "README.md"))
    except TableError:
        known = []
    folders = sorted({f for _, f, _ in files}, key=lambda f: (known.index(f) if f in known else len(known), f))
    order = []
    while len(order) < len(folders):
        ready = [f for f in folders if f not in order and used.get(f, set()) <= set(order)]
        if not ready:
            rest = ", ".join(f for f in folders if f not in order)
            print(f"check-layers: these folders use each other in a cycle: {rest}")
            return 1
        order.append(ready[0])
    for folder in order:
        row = ", ".join(f"`{other}`" for other in order if other in used.get(folder, ()))
        print(f"| `{folder}` | {row or '—'} |")
    return 0


# MARK: - Self-test

FIXTURE_README = """# Fixture

## Architecture

| folder | holds | may use |
|---|---|---|
| `Low` | the bottom | — |
| `High` | the top, with `Low` in its text | {high_uses} |

## Next
"""

FIXTURE_LOW = """
public struct Box {
    public var value: Int
}

func lowHelper(_ value: Int) -> Int {
    // Gadget, gadgetCount and High.sealed are only named in this comment,
    /* and in /* this nested */ one: Gadget */
    let text = "Gadget \\(value) gadgetCount"
    let raw = #"Gadget "\\(value)" \\#(value)"#
    return text.count + raw.count + value
}
"""

FIXTURE_HIGH = """
public struct Gadget {}

extension Box {
    /// Added by High to Low's type.
    static func sealed(_ value: Int) -> Box { Box(value: value) }
}

let gadgetCount = 3

@propertyWrapper public struct Kept<Value> {
    public var wrappedValue: Value
}

func use(box: Box) -> Int { lowHelper(box.value) }
"""

# Each: a Swift file added to Low, and the violations it must produce.
SELF_TEST_CASES = [
    ("clean", "", []),
    ("lowercase member of an extension", "let b = Box.sealed(1)\n", ["Low uses sealed (High)"]),
    ("implicit member", "let b: Box = .sealed(1)\n", ["Low uses sealed (High)"]),
    ("top-level constant", "let n = gadgetCount + 1\n", ["Low uses gadgetCount (High)"]),
    ("generic constraint", "func f<T>(_ t: T) where T == Gadget {}\n", ["Low uses Gadget (High)"]),
    ("generic argument", "let a: Set<Gadget> = []\n", ["Low uses Gadget (High)"]),
    ("attribute", "struct S {\n    @Kept var n: Int\n}\n", ["Low uses Kept (High)"]),
    ("interpolation", 'let s = "\\(gadgetCount)"\n', ["Low uses gadgetCount (High)"]),
    ("nested interpolation", 'let s = "a \\("b \\(Gadget.self)")"\n', ["Low uses Gadget (High)"]),
    ("name in a comment or a string", '// sealed Gadget\nlet s = "sealed Gadget"\n', []),
    ("a label of the same name", "func g(sealed: Int) -> Int { sealed }\n", []),
    ("a parameter's label of the same name", "func g(sealed value: Int) -> Int { value }\n", []),
    ("a local of the same name", "func h() -> Int { let sealed = 2\n return sealed }\n", []),
]


def self_test():
    """Runs the check on fixtures; returns 1 when it misses or invents something."""
    failures = []

    def run(high_uses, extra=(), low_uses="—"):
        """The check's output on a tree of Low (Box.swift), High (Gadget.swift) and `extra`."""
        with tempfile.TemporaryDirectory() as directory:
            root = pathlib.Path(directory)
            readme = FIXTURE_README.format(high_uses=high_uses)
            readme = readme.replace("the bottom | — |", f"the bottom | {low_uses} |")
            (root / "README.md").write_text(readme)
            fixtures = [("Low", "Box.swift", FIXTURE_LOW), ("High", "Gadget.swift", FIXTURE_HIGH), *extra]
            for folder, name, text in fixtures:
                (root / SOURCES / folder).mkdir(parents=True, exist_ok=True)
                (root / SOURCES / folder / name).write_text(text)
            out, err = io.StringIO(), io.StringIO()
            problems = check(root, out, err)
            return problems, out.getvalue() + err.getvalue()

    for title, swift, expected in SELF_TEST_CASES:
        problems, output = run("`Low`", [("Low", "Use.swift", swift)] if swift else [])
        got = [line.split(": ", 1)[1] for line in output.splitlines() if line.startswith("Sources/")]
        if got != expected or problems != len(expected):
            failures.append(f"{title}: expected {expected}, got {got}\n{output}")
    problems, output = run("`Low`", low_uses="`High`")
    if problems == 0 or "cycle: Low → High → Low" not in output:
        failures.append(f"the cycle Low → High → Low is not reported\n{output}")
    problems, output = run("`Low`, `High`")
    if problems == 0 or "cycle: High → High" not in output:
        failures.append(f"a folder that may use itself is not reported as a cycle\n{output}")
    problems, output = run("`Low`", [("Low", "Use.swift", "let b = Box.sealed(1)\n")], low_uses="`High`")
    if "cycle" not in output:
        failures.append(f"a use along a cycle is checked instead of the table being refused\n{output}")
    problems, output = run("`Low`", [("Middle", "Middle.swift", "struct Middle {}\n")])
    if problems == 0 or "Middle has no row" not in output:
        failures.append(f"a folder without a row is not reported\n{output}")
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        (root / "README.md").write_text(FIXTURE_README.format(high_uses="`Low`"))
        for folder, name in (("Low", "A.swift"), ("High", "B.swift")):
            (root / SOURCES / folder).mkdir(parents=True)
            (root / SOURCES / folder / name).write_text(f"struct {name[0]} {{}}\n")
        out = io.StringIO()
        if check(root, out, io.StringIO()) != 1 or "High may use Low, but nothing in High does" not in out.getvalue():
            failures.append(f"an edge that nothing uses is not reported\n{out.getvalue()}")
    cases = len(SELF_TEST_CASES) + 5
    for failure in failures:
        print(f"check-layers self-test FAILED: {failure}", file=sys.stderr)
    if failures:
        print(f"check-layers self-test: {len(failures)} of {cases} cases failed", file=sys.stderr)
        return 1
    print(f"check-layers self-test: {cases} cases pass")
    return 0


def main(arguments):
    root = REPO
    if arguments[:1] == ["--root"] and len(arguments) >= 2:
        root, arguments = pathlib.Path(arguments[1]), arguments[2:]
    if arguments == ["--self-test"]:
        return self_test()
    if arguments == ["--graph"]:
        return graph(root)
    if arguments:
        print("usage: check-layers.py [--root DIR] [--self-test | --graph]", file=sys.stderr)
        return 2
    return 1 if check(root) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
