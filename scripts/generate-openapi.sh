#!/bin/sh
# Regenerates the OpenAPI client of the OAuth2OpenAPI tests
# (Tests/OAuth2OpenAPITests/Generated/) from Tests/OAuth2OpenAPITests/openapi.yaml
# with swift-openapi-generator 1.14.3. The generated files are committed, so
# neither `make test` nor CI ever builds the generator; run this after
# changing openapi.yaml or the configuration, and commit what it writes.
#
#   scripts/generate-openapi.sh [PATH-TO-swift-openapi-generator]
#
# A generator given by path must be $version too (it cannot tell its version).
# Without a path, the generator is built (release, once) in a scratch folder
# outside the repository: ${OPENAPI_GENERATOR_DIR:-${TMPDIR:-/tmp}/swift-openapi-generator-1.14.3}.
set -eu
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
version=1.14.3
tests=Tests/OAuth2OpenAPITests

generator="${1:-}"
if [ -z "$generator" ]; then
    dir="${OPENAPI_GENERATOR_DIR:-${TMPDIR:-/tmp}/swift-openapi-generator-$version}"
    if [ ! -d "$dir/.git" ]; then
        git clone --quiet https://github.com/apple/swift-openapi-generator.git "$dir"
    fi
    git -C "$dir" checkout --quiet "$version"
    (cd "$dir" && "$SWIFT" build -c release --product swift-openapi-generator >&2)
    generator="$dir/.build/release/swift-openapi-generator"
fi

rm -f "$tests"/Generated/*.swift
"$generator" generate \
    --config "$tests/openapi-generator-config.yaml" \
    --output-directory "$tests/Generated" \
    "$tests/openapi.yaml"
echo "generate-openapi: wrote $tests/Generated/ (commit it)" >&2
