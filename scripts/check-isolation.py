#!/usr/bin/env python3
"""The OAuth2, OAuth2Testing and OAuth2Loopback products build without
SwiftNIO or postgres-nio: what each target may depend on, checked from the
manifest (`swift package describe`), so an app that uses only them never
compiles the PostgreSQL store's dependencies.

Checked once by hand from a clean scratch folder as well:
`swift build --target OAuth2 --scratch-path /tmp/x` compiles Crypto, its
BoringSSL wrapper, Logging and OAuth2, nothing else.
"""
import json
import subprocess
import sys

# target: (targets it may depend on, products it may depend on)
ALLOWED = {
    "OAuth2": ({"CCurl"}, {"Crypto", "_CryptoExtras", "Logging", "HTTPTypes", "CoreMetrics", "Tracing"}),
    "OAuth2Testing": ({"OAuth2"}, set()),
    "OAuth2Loopback": ({"OAuth2"}, set()),
}

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
if problems:
    print("check-isolation: " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"check-isolation: {', '.join(ALLOWED)} depend on {sorted(set().union(*(a | b for a, b in ALLOWED.values())))} only")
