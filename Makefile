# ChatLink. The two promised commands:
#   make run    set up, build, and run chatlinkd against the bundled local demo backend
#   make test   set up, and run every test (lint, unit, integration, allocations, sanitizers, Autobahn, fuzz, e2e)
SWIFT ?= swift
STRICT := -Xswiftc -warnings-as-errors
PYTHON := $(CURDIR)/.venv/bin/python
FUZZ_SECONDS ?= 60

.PHONY: all setup setup-test build release run test lint format unit integration alloc sanitize autobahn fuzz deb e2e chaos chaos-quick powerloss soak clean

all: build

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test

build: setup
	$(SWIFT) build $(STRICT)

release: setup
	$(SWIFT) build -c release $(STRICT)

run: release
	scripts/run-demo.sh

test: setup-test lint unit integration alloc sanitize autobahn fuzz e2e
	@echo "make test: all green"

lint:
	$(SWIFT) format lint --strict -r Package.swift Sources Tests
	python3 scripts/check-size.py
	python3 scripts/check-imports.py
	python3 scripts/check-unchecked.py --self-test
	python3 scripts/check-unchecked.py
	man/check.sh

format:
	$(SWIFT) format -i -r Package.swift Sources Tests

# Unit tests of the pure layers plus integration tests against independent peers (Python
# websockets over ws and wss); coverage is printed with a floor on the pure layers.
unit:
	$(SWIFT) build --build-tests $(STRICT)
	CHATLINK_TEST_PYTHON=$(PYTHON) $(SWIFT) test --enable-code-coverage $(STRICT)
	scripts/coverage.sh

# The daemon as a process against an independent backend (Python websockets) and an
# independent control client (Python varlink): faults, reconnects, delivery, crashes, abuse.
integration:
	$(SWIFT) build $(STRICT)
	CHATLINK_BIN=$$($(SWIFT) build --show-bin-path) Tests/integration/run.sh

# Heap allocations per inbound message, counted by a preloaded shim around the C allocator
# (Tests/integration/test_allocations.py): only an optimised build says anything, so this
# one test runs against `-c release`.
alloc:
	$(SWIFT) build -c release $(STRICT) --product chatlinkd
	CHATLINK_ALLOC=1 CHATLINK_BIN=$$($(SWIFT) build -c release --show-bin-path) \
	  Tests/integration/run.sh -k test_allocations

# The unit tests and an integration subset under AddressSanitizer (UBSan on our C) and under
# ThreadSanitizer, each build in a scratch path of its own; any report fails the run with its
# stack (Tests/sanitize/README.md). About 5 minutes on 2 cores.
sanitize: setup-test
	SWIFT=$(SWIFT) Tests/sanitize/run.sh

# The full Autobahn|Testsuite (517 cases, compression included) against our client agent.
autobahn:
	$(SWIFT) build -c release $(STRICT) --product chatlink-autobahn
	Tests/autobahn/run.sh $$($(SWIFT) build -c release --show-bin-path)/chatlink-autobahn

fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

# Faults with figures (Tests/chaos/README.md): network, backend, kill -9, disk full, control-socket
# abuse, a 20-minute soak, security. Needs root; about 30 minutes, chaos-quick about 6.
chaos: powerloss
	Tests/chaos/run.sh

# Power cuts (Tests/powerloss/README.md): the daemon's store on a lazy FUSE file system that
# keeps only what was fsynced; 9 scenarios x 40 random cuts, a table, non-zero on any broken
# durability rule. Needs root and the debug build (the integration tests run 40 cuts of it).
POWERLOSS_CUTS ?= 40
powerloss: setup-test
	$(SWIFT) build $(STRICT)
	CHATLINK_BIN=$$($(SWIFT) build --show-bin-path) $(PYTHON) Tests/powerloss/powercut.py --cuts $(POWERLOSS_CUTS)

chaos-quick:
	CHAOS_QUICK=1 Tests/chaos/run.sh

# A soak that would catch a slow leak (issue 35; Tests/soak/soak.py, bench/README.md "Soak"):
# the release chatlinkd for SOAK_MINUTES (default 60) at 1,000 inbound msg/s over 20 rooms, 50
# sends/s, history queries, follow clients, scrapes, reconnects, rotations and reloads; fails
# on RSS, anonymous memory, fds or threads growing. Not part of make test.
SOAK_MINUTES ?= 60
soak: setup-test
	SOAK_MINUTES=$(SOAK_MINUTES) Tests/soak/run.sh

# dist/chatlink_<version>_amd64.deb, static Swift runtime, stripped.
deb: setup
	scripts/build-deb.sh

# The .deb in a clean Debian 12 tree booted with systemd-nspawn: install, start, send,
# reload, kill -9, watchdog, socket activation, credentials, purge (needs root).
e2e:
	Tests/e2e/run.sh

# The inbound path by stage (ns per message, bench/stages.py) and perf's hot spots, for
# bench/README.md: release binaries as the bench builds them, then bench/profile.sh flood.
profile: setup-test
	RELEASE_SCRATCH=.cache/bench/build scripts/build-release.sh .cache/bench/build/bin chatlinkd chatlinkctl chatlink-devserver
	bench/profile.sh flood

# scripts/chatlinkd.order, the function order of chatlinkd's release link, from callgrind runs
# of the release binaries (idle, then a flood); rerun when build-release.sh says it has drifted.
order-file: setup-test
	RELEASE_SCRATCH=.cache/bench/build scripts/build-release.sh .cache/bench/build/bin chatlinkd chatlinkctl chatlink-devserver
	scripts/make-order-file.sh .cache/bench/build/bin

clean:
	rm -rf .build .cache/autobahn-reports

# The benchmark suite of issue 6 (not part of make test): chatlinkd against Go and Python peers.
.PHONY: bench profile order-file
bench:
	bench/run.sh
