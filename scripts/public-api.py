#!/usr/bin/env python3
"""The public API of the framework's products, as a reviewed record.

    scripts/public-api.py            check: the built modules' public
                                     declarations equal the record in API/
    scripts/public-api.py --update   write the record anew

The declarations come from the compiler's symbol graphs (`swift package
dump-symbol-graph`, public symbols only: `package`, internal and `@_spi`
declarations are not API). One line per declaration, `Path.to.member:
declaration`, sorted. `make test` checks it, so the public surface changes
only with a change to API/ that a reviewer sees.
"""
import difflib
import json
import pathlib
import re
import subprocess
import sys

MODULES = ["OAuth2", "OAuth2Testing", "OAuth2Loopback", "OAuth2Postgres", "OAuth2OpenAPI"]
ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "API"


def symbol_graph_directory(swift):
    result = subprocess.run([swift, "package", "dump-symbol-graph"], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        sys.exit("public-api: swift package dump-symbol-graph failed")
    match = re.search(r"Files written to (\S+)", result.stdout + result.stderr)
    if not match:
        sys.exit("public-api: could not find where the symbol graphs were written")
    return pathlib.Path(match.group(1))


def declarations(graph):
    document = json.loads(graph.read_text())
    lines = set()
    paths = {}
    for symbol in document["symbols"]:
        if symbol.get("accessLevel") != "public":
            continue
        path = ".".join(symbol["pathComponents"])
        paths[symbol["identifier"]["precise"]] = path
        declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
        lines.add(f"{path}: {' '.join(declaration.split())}")
    # Conformances are API too: dropping Sendable or Codable breaks users.
    # Copyable and Escapable are implicit for every type, and the symbol graph
    # lists them for some types only: left out.
    for relation in document.get("relationships", []):
        if relation["kind"] == "conformsTo" and relation["source"] in paths:
            target = paths.get(relation["target"]) or relation.get("targetFallback") or relation["target"]
            if target in ("Swift.Copyable", "Swift.Escapable"):
                continue
            lines.add(f"{paths[relation['source']]}: conforms to {target}")
    return sorted(lines)


def main(arguments):
    update = "--update" in arguments
    swift = next((a.split("=", 1)[1] for a in arguments if a.startswith("--swift=")), "swift")
    directory = symbol_graph_directory(swift)
    RECORD.mkdir(exist_ok=True)
    changed = False
    for module in MODULES:
        graph = directory / f"{module}.symbols.json"
        record = RECORD / f"{module}.txt"
        if not graph.exists():
            if record.exists():
                sys.stderr.write(f"public-api: {module} was not built but has a record in API/\n")
                changed = True
            continue
        current = declarations(graph)
        text = "\n".join(current) + "\n"
        if update:
            record.write_text(text)
            print(f"public-api: recorded {len(current)} public declarations of {module} in {record.relative_to(ROOT)}")
            continue
        recorded = record.read_text().splitlines() if record.exists() else []
        if recorded != current:
            changed = True
            sys.stderr.writelines(
                line + "\n"
                for line in difflib.unified_diff(recorded, current, f"API/{module}.txt (recorded)", f"{module} (built)", lineterm="")
            )
    if changed:
        sys.exit("public-api: the public API differs from the record in API/; if the change is meant, run `make api-update` and commit API/")
    if not update:
        print("public-api: the public API matches API/")


if __name__ == "__main__":
    main(sys.argv[1:])
