# The two commands of the README: `make demo` (the CLI against a local provider)
# and `make test` (every test). Each installs what is missing first.
SWIFT ?= swift

.PHONY: all build cli deps test-deps lint format api-check api-update docs test test-tsan test-server-example test-mcp-example demo clean fuzz fuzz-merge fuzz-replay

all: build

deps:
	@scripts/ensure-deps.sh

# What only the tests use, besides: a kubectl (Debian's kubernetes-client,
# kubectl 1.20 on Debian 12) for the test that runs a real one, so that CI,
# which starts from a fresh Debian, runs it instead of skipping it; glewlwyd
# (the second provider) and nginx (the mutual TLS suites start their own,
# asking for client certificates).
test-deps:
	@scripts/ensure-deps.sh kubectl=kubernetes-client glewlwyd nginx $(if $(filter 0,$(shell id -u)),nft=nftables)

build: deps
	$(SWIFT) build

# The CLI as it is best shipped (scripts/build-cli.sh: release, the Swift
# runtime linked in, lld with packed relocations): `oauth2` and
# `oauth2-postgres`, to install in one directory, in .build/cli/release.
cli: deps
	@SWIFT="$(SWIFT)" scripts/build-cli.sh oauth2 oauth2-postgres

# A throwaway PostgreSQL (scripts/postgres.sh: Debian's package, installed when
# missing; a cluster on a free 127.0.0.1 port, its data in a private directory under
# /tmp and its env.sh in .build/postgres/main) serves the
# PostgreSQL token store's tests (Tests/OAuth2PostgresTests); the same trap
# stops it. `make demo` needs none of it.
# The integration tests (Tests/IntegrationTests) drive the built oauth2 binary
# against four local providers: main (hour-long tokens), short (2-second
# tokens), and rotate and grace (2-second tokens, refresh-token reuse
# protection, without and with a grace period; the several-processes tests
# of DeploymentTests), and oidc (the OpenID tests' own: they rotate its
# signing key). Every provider is an OpenID provider too. The OpenID
# Foundation's relying-party modules (Tests/ConformanceTests) start their own
# provider, Tests/ConformanceTests/Provider/op.py, with the venv's Python
# (jwcrypto): OAUTH2_IT_CONFORMANCE_PYTHON. Also a test provider that behaves
# as Microsoft Entra ID (any tenant) and Google sign-in are documented to
# (scripts/entra-provider.sh, Tests/EntraProvider/serve.py; OAUTH2_IT_ENTRA),
# as neither can be reached from here. Beside them, an
# implementation that is not ours for DPoP, PAR, JAR and mutual TLS
# (scripts/glewlwyd.sh, Tests/Glewlwyd/README.md): Debian's glewlwyd with a
# DPoP resource server (auth0-api-python), plain (OAUTH2_IT_GLEWLWYD) and
# behind a TLS front that checks client certificates (OAUTH2_IT_GLEWLWYD_TLS);
# its raw-HTTP self-test runs first, so that a broken witness is told apart
# from a broken client. The same for main's self-configuring side (issue 38:
# scripts/provider-selftest.sh, raw HTTP). Sign in with Apple, which cannot be
# reached from here, is played by Tests/AppleProvider (scripts/apple-provider.sh:
# Apple's documented behaviour, with string booleans in its ID tokens, and a
# second one with JSON booleans). The Hummingbird example (Examples/SignInServer, a
# package of its own) is then built and tested against main and short. The
# trap stops the providers whatever happens.
PROVIDERS = --name main --name short --name rotate --name grace --name oidc

# The architecture's rules that the compiler does not check: the folders of
# Sources/OAuth2 use each other only as the README's architecture table says
# (the checker first shows on fixtures that it catches what it must), and
# OAuth2, OAuth2Testing, OAuth2Loopback and OAuth2OpenAPI depend on nothing
# that pulls in SwiftNIO or postgres-nio. And the whole tree is as swift format leaves it.
lint: deps
	@python3 scripts/check-layers.py --self-test
	@python3 scripts/check-layers.py
	@python3 scripts/check-isolation.py $(SWIFT)
	@SWIFT="$(SWIFT)" scripts/check-format.sh

# swift format (in the toolchain) with .swift-format, in place; make lint checks it.
format:
	@SWIFT="$(SWIFT)" scripts/check-format.sh --fix

# The public API is a reviewed record (API/*.txt): make test fails when the
# built products' public declarations differ from it; `make api-update`
# records a change that is meant, for the reviewer to see in the diff.
api-check: deps
	$(SWIFT) build
	@python3 scripts/public-api.py --swift=$(SWIFT)

api-update: deps
	$(SWIFT) build
	@python3 scripts/public-api.py --swift=$(SWIFT) --update

test: test-deps lint
	$(SWIFT) build --build-tests
	@python3 scripts/public-api.py --swift=$(SWIFT)
	@SWIFT="$(SWIFT)" scripts/docs.sh
	@"$$($(SWIFT) build --show-bin-path)/oauth2-fuzz" replay
	@trap 'scripts/provider-stop.sh $(PROVIDERS) >/dev/null; scripts/entra-provider.sh stop; scripts/apple-provider.sh stop; scripts/apple-provider.sh --name boolean stop; scripts/glewlwyd.sh stop; scripts/glewlwyd.sh --name tls stop; scripts/postgres.sh stop; scripts/postgres.sh --name restart stop' EXIT; trap 'exit 130' INT TERM; \
	scripts/postgres.sh start >/dev/null && . "$(CURDIR)/.build/postgres/main/env.sh" && \
	scripts/glewlwyd.sh start >/dev/null && scripts/glewlwyd.sh --name tls start --tls >/dev/null && \
	{ scripts/glewlwyd.sh selftest >.build/glewlwyd/main/selftest.log 2>&1 || { cat .build/glewlwyd/main/selftest.log; false; }; } && \
	{ scripts/glewlwyd.sh --name tls selftest >.build/glewlwyd/tls/selftest.log 2>&1 || { cat .build/glewlwyd/tls/selftest.log; false; }; } && \
	scripts/provider-start.sh --name main >/dev/null && \
	{ scripts/provider-selftest.sh >.build/provider/main/selftest.log 2>&1 || { cat .build/provider/main/selftest.log; false; }; } && \
	scripts/provider-start.sh --name short --access-token-lifetime 2 >/dev/null && \
	scripts/provider-start.sh --name rotate --access-token-lifetime 2 --reuse-protection >/dev/null && \
	scripts/provider-start.sh --name grace --access-token-lifetime 2 --reuse-protection --grace-period 30 >/dev/null && \
	scripts/provider-start.sh --name oidc --reuse-protection >/dev/null && \
	scripts/entra-provider.sh start >/dev/null && \
	export OAUTH2_IT_ENTRA="$(CURDIR)/.build/entra-provider/env.json" && \
	scripts/apple-provider.sh start >/dev/null && scripts/apple-provider.sh --name boolean start --boolean-claims >/dev/null && \
	export OAUTH2_IT_APPLE_PROVIDER="$(CURDIR)/.build/apple-provider/main/env.json" && \
	export OAUTH2_IT_APPLE_BOOLEAN_PROVIDER="$(CURDIR)/.build/apple-provider/boolean/env.json" && \
	export OAUTH2_IT_PROVIDER="$(CURDIR)/.build/provider/main/env.json" && \
	export OAUTH2_IT_SHORT_PROVIDER="$(CURDIR)/.build/provider/short/env.json" && \
	export OAUTH2_IT_ROTATE_PROVIDER="$(CURDIR)/.build/provider/rotate/env.json" && \
	export OAUTH2_IT_GRACE_PROVIDER="$(CURDIR)/.build/provider/grace/env.json" && \
	export OAUTH2_IT_OIDC_PROVIDER="$(CURDIR)/.build/provider/oidc/env.json" && \
	export OAUTH2_IT_CONFORMANCE_PYTHON="$(CURDIR)/.build/provider/venv/bin/python" && \
	export OAUTH2_IT_GLEWLWYD="$(CURDIR)/.build/glewlwyd/main/env.json" && \
	export OAUTH2_IT_GLEWLWYD_TLS="$(CURDIR)/.build/glewlwyd/tls/env.json" && \
	OAUTH2_IT_BINARY="$$($(SWIFT) build --show-bin-path)/oauth2" SWIFT="$(SWIFT)" scripts/swift-test.sh && \
	SWIFT="$(SWIFT)" scripts/test-server-example.sh && \
	SWIFT="$(SWIFT)" scripts/test-mcp-example.sh
	$(MAKE) --no-print-directory test-tsan

# The DocC documentation of the library products (Sources/*/*.docc, built by
# swift-docc-plugin into .build/docs/swift-oauth2.doccarchive), warnings as
# errors: a broken ``Symbol`` link fails it, and so `make test`.
docs: deps
	@SWIFT="$(SWIFT)" scripts/docs.sh

# The unit and transport suites again under ThreadSanitizer (part of `make
# test`, so CI enforces it). The integration suites drive the oauth2 binary in
# other processes and need providers; here they are skipped, and say so.
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	@trap 'scripts/postgres.sh stop' EXIT; trap 'exit 130' INT TERM; \
	scripts/postgres.sh start >/dev/null && . "$(CURDIR)/.build/postgres/main/env.sh" && \
	TSAN_OPTIONS=halt_on_error=1 SWIFT="$(SWIFT)" scripts/swift-test.sh --skip-build --sanitize=thread --scratch-path .build-tsan

# The Hummingbird example (Examples/SignInServer), its own package, against local providers.
test-server-example: deps
	@SWIFT="$(SWIFT)" scripts/test-server-example.sh

test-mcp-example: deps
	@SWIFT="$(SWIFT)" scripts/test-mcp-example.sh

# The CLI against a local provider, narrated on stderr. `make demo PASTE=1`
# lets you play the browser yourself and paste the redirect.
demo: deps
	@PASTE="$(PASTE)" SWIFT="$(SWIFT)" scripts/demo.sh

# Fuzzing (Fuzz/, README "Fuzzing"): `make fuzz` runs each libFuzzer target
# for FUZZ_SECONDS under AddressSanitizer (FUZZ_TARGETS="json host" for some,
# FUZZ_OPTIONS for more libFuzzer options);
# `make fuzz-merge` adds what those runs found that covers new code to
# Fuzz/Corpus. `make test` replays the corpus without exploring (fuzz-replay).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_OPTIONS ?=

fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_OPTIONS="$(FUZZ_OPTIONS)" SWIFT="$(SWIFT)" scripts/fuzz.sh run $(FUZZ_TARGETS)

fuzz-merge: deps
	@SWIFT="$(SWIFT)" scripts/fuzz.sh merge $(FUZZ_TARGETS)

fuzz-replay: deps
	$(SWIFT) build --product oauth2-fuzz
	@"$$($(SWIFT) build --show-bin-path)/oauth2-fuzz" replay $(FUZZ_TARGETS)

clean:
	-scripts/postgres.sh stop
	rm -rf .build .build-tsan .build-fuzz

# Benchmarks (Benchmarks/, a package of its own; BENCHMARKS.md): swift-oauth2,
# raw libcurl from C, Go x/oauth2 and the hand-off floor on a local nginx,
# interleaved, as ratios, in process and as whole processes (hyperfine).
# `make bench N=5000 ROUNDS=5` for a quicker run; ONLY=requests or
# ONLY=whole-process for those rows alone; BASE=<git rev> to interleave that
# revision's rows with this tree's. `make bench-leaks` for valgrind and LeakSanitizer.
.PHONY: bench bench-leaks
bench: deps
	@N="$(N)" ROUNDS="$(ROUNDS)" BASE="$(BASE)" ONLY="$(ONLY)" python3 Benchmarks/bench.py

bench-leaks: deps
	@python3 Benchmarks/bench.py --leaks
