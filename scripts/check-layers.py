#!/usr/bin/env python3
"""Checks that the folders of Sources/OAuth2 depend on each other one way.

The layers, lowest first (README, "Architecture"); a file may use the types
of its own folder and of the folders before it, never of one after it:

    Support → Transport → Errors → Tokens → JOSE → Storage → Configuration → OpenID → Flows → Signing → Client

A type belongs to the folder whose file declares it at top level. A use is a
capitalised identifier outside comments and string literals that names such
a type. Prints each violation as `file:line: Folder uses Type (Other)` and
exits 1 when there is any.
"""
import pathlib
import re
import sys

LAYERS = ["Support", "Transport", "Errors", "Tokens", "JOSE", "Storage", "Configuration", "OpenID", "Flows", "Signing", "Client"]
ROOT = pathlib.Path(__file__).resolve().parent.parent / "Sources" / "OAuth2"
DECLARATION = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|indirect)\s+)*"
    r"(?:struct|enum|class|protocol|actor|typealias)\s+(\w+)",
    re.M,
)
COMMENT_OR_STRING = re.compile(r'//[^\n]*|"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"')


def main():
    owner = {}
    sources = []
    for path in sorted(ROOT.rglob("*.swift")):
        folder = path.relative_to(ROOT).parts[0]
        if folder not in LAYERS:
            print(f"{path}: folder {folder} is not in the layer list of {__file__}", file=sys.stderr)
            return 1
        text = path.read_text()
        sources.append((path, folder, text))
        for name in DECLARATION.findall(text):
            owner.setdefault(name, folder)
    violations = 0
    for path, folder, text in sources:
        rank = LAYERS.index(folder)
        code = COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for number, line in enumerate(code.split("\n"), start=1):
            for name in set(re.findall(r"\b[A-Z]\w*\b", line)):
                other = owner.get(name)
                if other and LAYERS.index(other) > rank:
                    print(f"{path.relative_to(ROOT.parent.parent)}:{number}: {folder} uses {name} ({other})")
                    violations += 1
    if violations:
        print(f"check-layers: {violations} use(s) against the layer order " + " → ".join(LAYERS), file=sys.stderr)
        return 1
    print(f"check-layers: {len(sources)} files, layers " + " → ".join(LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
