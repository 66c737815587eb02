# Cairn: every entry point installs what it needs on a fresh Debian machine.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := liblmdb-dev libsqlite3-dev pkg-config

.PHONY: deps build test demo bench clean

# liblmdb-dev (and pkg-config, which SwiftPM uses to find it) when missing.
deps:
	@if ! (command -v pkg-config >/dev/null 2>&1 && pkg-config --exists lmdb sqlite3); then \
		echo "installing $(APT_PACKAGES)"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); \
	fi

build: deps
	$(SWIFT) build

# Build first, so a compile error is never mistaken for a test result.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	@echo "benchmark smoke run (sizes too small to mean anything; keeps the benchmark from rotting)"
	$(SWIFT) run cairn-bench --quick --rounds 1 > .build/bench-quick.txt 2>&1 || { cat .build/bench-quick.txt; exit 1; }

demo: deps
	$(SWIFT) build -c release --product cairn
	.build/release/cairn demo

# The benchmark compares Cairn with raw LMDB and SQLite in one run; see Docs/Benchmarks.md.
bench: deps
	$(SWIFT) build -c release --product cairn-bench
	.build/release/cairn-bench --json .build/bench.json --svg Docs/commits-by-writers.svg

clean:
	rm -rf .build
