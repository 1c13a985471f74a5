# The two commands of the README: `make demo` (the CLI against a local provider)
# and `make test` (every test). Each installs what is missing first.
SWIFT ?= swift

.PHONY: all build deps test test-tsan demo clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(SWIFT) build

# The integration tests (Tests/IntegrationTests) drive the built oauth2 binary
# against two local providers; the trap stops them whatever happens.
test: deps
	$(SWIFT) build --build-tests
	@trap 'scripts/provider-stop.sh --name main --name short >/dev/null' EXIT; trap 'exit 130' INT TERM; \
	scripts/provider-start.sh --name main >/dev/null && \
	scripts/provider-start.sh --name short --access-token-lifetime 2 >/dev/null && \
	OAUTH2_IT_PROVIDER="$(CURDIR)/.build/provider/main/env.json" \
	OAUTH2_IT_SHORT_PROVIDER="$(CURDIR)/.build/provider/short/env.json" \
	OAUTH2_IT_BINARY="$$($(SWIFT) build --show-bin-path)/oauth2" \
	$(SWIFT) test

test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

# The CLI against a local provider, narrated on stderr. `make demo PASTE=1`
# lets you play the browser yourself and paste the redirect.
demo: deps
	@PASTE="$(PASTE)" SWIFT="$(SWIFT)" scripts/demo.sh

clean:
	rm -rf .build .build-tsan
