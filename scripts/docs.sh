#!/bin/sh
# The DocC documentation of the four library products (OAuth2, OAuth2Testing,
# OAuth2Loopback, OAuth2Postgres), built by swift-docc-plugin as one combined
# archive so that the smaller products link to OAuth2's symbols. Warnings are
# errors: a ``Symbol`` link or a <doc:Article> that does not resolve fails
# `make docs`, and so `make test`. The archive: .build/docs/swift-oauth2.doccarchive.
set -eu
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
out=.build/docs
mkdir -p "$out"
exec "$SWIFT" package --allow-writing-to-directory "$out" generate-documentation \
    --target OAuth2 --target OAuth2Testing --target OAuth2Loopback --target OAuth2Postgres --target OAuth2OpenAPI \
    --enable-experimental-combined-documentation \
    --warnings-as-errors \
    --output-path "$out/swift-oauth2.doccarchive"
