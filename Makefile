# Cairn: every entry point installs what it needs on a fresh Debian machine.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := liblmdb-dev libsqlite3-dev pkg-config strace etcd-server

.PHONY: deps build test demo bench clean

# liblmdb-dev (and pkg-config, which SwiftPM uses to find it) when missing; strace for the
# test that counts ingest's write calls; etcd-server for the etcd backend's tests, which start
# their own loopback cluster (the package's etcd service is not used).
deps:
	@if ! (command -v pkg-config >/dev/null 2>&1 && pkg-config --exists lmdb sqlite3 && command -v strace >/dev/null 2>&1 && command -v etcd >/dev/null 2>&1); then \
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
	@echo "group-commit model (Docs/probes): builds and runs"
	$(CC) -O2 -Wall -Werror -pthread Docs/probes/group-commit-model.c -o .build/group-commit-model
	.build/group-commit-model serial 2 200 .build/group-commit-model.dat
	.build/group-commit-model spin 2 200 .build/group-commit-model.dat

demo: deps
	$(SWIFT) build -c release --product cairn
	.build/release/cairn demo

# The benchmark compares Cairn with raw LMDB and SQLite in one run; see Docs/Benchmarks.md.
# The results alone (progress goes to stderr) also land in .build/bench.txt, to paste there.
bench: deps
	$(SWIFT) build -c release --product cairn-bench
	bash -o pipefail -c '.build/release/cairn-bench --json .build/bench.json --svg Docs/commits-by-writers.svg | tee .build/bench.txt'

clean:
	rm -rf .build

# ---- Reliability: Docs/Testing.md says what each target proves and how to replay a seed ----
.PHONY: torture fuzz tsan asan

# Build directories of their own for the sanitizer builds, so they never clobber .build.
RELIABILITY_SCRATCH ?= .build
TSAN_SCRATCH ?= .build/tsan
ASAN_SCRATCH ?= .build/asan
FUZZ_SECONDS ?= 60

# The reliability suites at full size (`make test` runs their short versions): kill -9 loop,
# power loss, I/O errors, corruption, isolation history, resource limits, and the reader
# processes beside killed writers (ReaderProcessTests). Their counts and
# seeds are collected in $(RELIABILITY_SCRATCH)/torture-report.txt.
torture: deps
	$(SWIFT) build --build-tests --scratch-path $(RELIABILITY_SCRATCH)
	rm -f $(RELIABILITY_SCRATCH)/torture-report.txt
	CAIRN_TORTURE=1 CAIRN_RELIABILITY_LOG=$(abspath $(RELIABILITY_SCRATCH))/torture-report.txt \
		$(SWIFT) test --skip-build --scratch-path $(RELIABILITY_SCRATCH) --filter 'ReliabilityTests|ReaderProcessTests'
	@echo "---- torture report ----"; cat $(RELIABILITY_SCRATCH)/torture-report.txt

# libFuzzer targets (Fuzz/, a package of its own) under AddressSanitizer, FUZZ_SECONDS each.
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT="$(SWIFT)" Fuzz/fuzz.sh

# The whole test suite under ThreadSanitizer; the exit status is what counts (a report can
# come with "0 failures" printed).
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	CAIRN_SANITIZER=thread $(SWIFT) test --skip-build --sanitize=thread --scratch-path $(TSAN_SCRATCH)

# The whole test suite under AddressSanitizer. Its leak checker reports false leaks on Linux
# even for empty tests, so it is off.
asan: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path $(ASAN_SCRATCH)
	CAIRN_SANITIZER=address ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --skip-build --sanitize=address --scratch-path $(ASAN_SCRATCH)
