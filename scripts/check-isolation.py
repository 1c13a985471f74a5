#!/usr/bin/env python3
"""The OAuth2, OAuth2Testing, OAuth2Loopback and OAuth2OpenAPI products,
and the `oauth2` command-line tool (OAuth2CLI), build without SwiftNIO or
postgres-nio: what each target may depend on,
checked from the manifest (`swift package describe`), so an app that uses
only them never compiles the PostgreSQL store's dependencies. OAuth2OpenAPI
may use swift-openapi-runtime and swift-http-types, which are NIO-free;
their own dependencies are checked from the resolved packages' manifests.

The CLI's sources, and the library's, also import FoundationEssentials, never
full Foundation (which loads ICU and costs `oauth2` its quick start-up):
`import Foundation` is allowed only as the `#else` of
`#if canImport(FoundationEssentials)`, and in `oauth2-postgres`, whose driver
needs it anyway.

Checked once by hand from a clean scratch folder as well:
`swift build --target OAuth2 --scratch-path /tmp/x` compiles Crypto, its
BoringSSL wrapper, Logging and OAuth2, nothing else.
"""
import json
import os
import re
import subprocess
import sys

# target: (targets it may depend on, products it may depend on)
ALLOWED = {
    "OAuth2": ({"CCurl"}, {"Crypto", "_CryptoExtras", "Logging", "HTTPTypes", "CoreMetrics", "Tracing"}),
    "OAuth2Testing": ({"OAuth2"}, set()),
    "OAuth2Loopback": ({"OAuth2"}, set()),
    "OAuth2OpenAPI": ({"OAuth2"}, {"OpenAPIRuntime", "HTTPTypes"}),
    "OAuth2CLI": ({"OAuth2", "OAuth2Loopback"}, {"Logging", "ArgumentParser"}),
    "oauth2": ({"OAuth2CLI"}, set()),
}

# Folders whose Swift files may import full Foundation only as the fallback
# of `#if canImport(FoundationEssentials)`.
ESSENTIALS_ONLY = ["Sources/OAuth2", "Sources/OAuth2Loopback", "Examples/oauth2/OAuth2CLI", "Examples/oauth2/oauth2"]

# The packages OAuth2OpenAPI's products come from may depend on these only
# (none brings SwiftNIO); a new one is a decision, made here.
OPENAPI_PACKAGES_MAY_USE = {"swift-http-types"}

swift = sys.argv[1] if len(sys.argv) > 1 else "swift"
description = json.loads(subprocess.run([swift, "package", "describe", "--type", "json"], check=True, capture_output=True, text=True).stdout)
targets = {t["name"]: t for t in description["targets"]}
problems = []
for name, (allowed_targets, allowed_products) in ALLOWED.items():
    target = targets.get(name)
    if target is None:
        problems.append(f"{name}: no such target")
        continue
    extra_targets = set(target.get("target_dependencies") or []) - allowed_targets
    extra_products = set(target.get("product_dependencies") or []) - allowed_products
    if extra_targets or extra_products:
        problems.append(f"{name} depends on {sorted(extra_targets | extra_products)}: only {sorted(allowed_targets | allowed_products)} keep it free of SwiftNIO and postgres-nio")

# What those packages depend on in turn, as resolved (`swift package
# show-dependencies`): a newer swift-openapi-runtime that brought SwiftNIO
# would fail here.
def dependencies_of(node, identity):
    if node.get("identity") == identity:
        return node.get("dependencies") or []
    for child in node.get("dependencies") or []:
        found = dependencies_of(child, identity)
        if found is not None:
            return found
    return None


graph = json.loads(subprocess.run([swift, "package", "show-dependencies", "--format", "json"], check=True, capture_output=True, text=True).stdout)
for identity in ("swift-openapi-runtime", "swift-http-types"):
    children = dependencies_of(graph, identity)
    if children is None:
        problems.append(f"{identity} is not among the resolved packages")
        continue
    extra = sorted({child.get("identity", "") for child in children} - OPENAPI_PACKAGES_MAY_USE)
    if extra:
        problems.append(f"{identity} depends on {extra}: OAuth2OpenAPI must stay free of SwiftNIO")

# The one form a fallback to full Foundation may take: these three lines
# before it, the import of FoundationEssentials with the same modifiers.
IMPORT = r"^(@\S+\s+)*((public|package|internal)\s+)?import\s+"
FOUNDATION_IMPORT = re.compile(IMPORT + r"Foundation$")
ESSENTIALS_IMPORT = re.compile(IMPORT + r"FoundationEssentials$")


def guarded(lines, index):
    """Whether the import of full Foundation at `index` is the `#else` of the guard."""
    return (
        index >= 3
        and lines[index - 3] == "#if canImport(FoundationEssentials)"
        and ESSENTIALS_IMPORT.match(lines[index - 2]) is not None
        and lines[index - 1] == "#else"
    )


for folder in ESSENTIALS_ONLY:
    for directory, _, files in os.walk(folder):
        for file in files:
            if not file.endswith(".swift"):
                continue
            path = os.path.join(directory, file)
            with open(path, encoding="utf-8") as source:
                lines = [line.strip() for line in source]
            for index, line in enumerate(lines):
                if FOUNDATION_IMPORT.match(line) and not guarded(lines, index):
                    problems.append(f"{path}:{index + 1} imports full Foundation: use FoundationEssentials (`#if canImport(FoundationEssentials)`)")

if problems:
    print("check-isolation: " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"check-isolation: {', '.join(ALLOWED)} depend on {sorted(set().union(*(a | b for a, b in ALLOWED.values())))} only; "
      f"{', '.join(ESSENTIALS_ONLY)} import FoundationEssentials, not Foundation")
