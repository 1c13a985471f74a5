# The two commands of the README: `make demo` (the CLI against a local provider)
# and `make test` (every test). Each installs what is missing first.
SWIFT ?= swift

.PHONY: all build deps test test-tsan test-server-example demo clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

# The Hummingbird example (Examples/SignInServer), its own package, against local providers.
test-server-example: deps
	@SWIFT="$(SWIFT)" scripts/test-server-example.sh

demo: deps
	@echo "demo: the CLI arrives with issue 4" >&2

clean:
	rm -rf .build .build-tsan
