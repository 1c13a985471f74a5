#!/usr/bin/env bash
# Builds the command-line tool as it is best shipped (README, "The oauth2 CLI";
# BENCHMARKS.md, "What was tried"; each step measured in its lab notes,
# `git show e106a6a:BENCHMARKS.md`):
# - release, with the Swift runtime linked in (--static-swift-stdlib): the
#   dynamic loader then binds libc's, not the runtime's, symbols;
# - linked by lld with packed relative relocations (-z pack-relative-relocs,
#   which glibc 2.36 and later read): the loader then reads 10 KiB of
#   relocations instead of 1.2 MiB, and the start-up touches fewer pages;
# - without the $ORIGIN run path SwiftPM adds (--disable-local-rpath): with it
#   the loader first looks for libc, libm, libstdc++, libgcc_s and libcurl in
#   the binary's own folder (and, once, its glibc-hwcaps and tls subfolders:
#   22 failed opens for `oauth2 --version`), and would load one planted there;
# - exporting only the symbols the shared libraries need (--no-export-dynamic):
#   SwiftPM exports the binary's 12,000 symbols, and the Swift runtime's first
#   dladdr (its own path, at start-up) scans them all.
# Usage: scripts/build-cli.sh [--scratch-path DIR] [PRODUCT...]
# (products: oauth2, the default, and oauth2-postgres). Prints the binaries' folder.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
scratch=.build/cli
if [ "${1:-}" = "--scratch-path" ]; then
    scratch=$2
    shift 2
fi
products=("$@")
[ "${#products[@]}" -gt 0 ] || products=(oauth2)

flags=(-c release --static-swift-stdlib --scratch-path "$scratch"
       -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs
       --disable-local-rpath -Xlinker --no-export-dynamic)
for product in "${products[@]}"; do
    "$SWIFT" build "${flags[@]}" --product "$product" >&2
done
"$SWIFT" build "${flags[@]}" --show-bin-path
