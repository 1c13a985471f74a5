# The two commands of the README: `make demo` (the CLI against a local provider)
# and `make test` (every test). Each installs what is missing first.
SWIFT ?= swift

.PHONY: all build deps test test-tsan demo clean

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

demo: deps
	@echo "demo: the CLI arrives with issue 4" >&2

clean:
	rm -rf .build .build-tsan

# Benchmarks (Benchmarks/, a package of its own): libcurl from C against
# swift-oauth2 on a local nginx, interleaved, as ratios. `make bench N=5000`
# for a quicker run; `make bench-leaks` for valgrind and LeakSanitizer.
.PHONY: bench bench-leaks
bench: deps
	@N="$(N)" ROUNDS="$(ROUNDS)" python3 Benchmarks/bench.py

bench-leaks: deps
	@python3 Benchmarks/bench.py --leaks
