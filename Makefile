# The two commands of the README's quick start, and the pieces they are made of.
#
#   make tune    build (release) and run the main job: `coretune tune` on the built-in workload
#   make test    everything CI checks: format, clippy, unit/integration/doc tests (one pass,
#                optimised with debug assertions and overflow checks on, including the VM tests,
#                tests/vm.rs), benchmark smoke runs, docs, the pool's loom models, a fuzz smoke
#                run, and the Windows build's tests under Wine (make test-windows)
#
# Both install the system packages they need first (scripts/setup.sh), and so does
#
#   make install    build (release), then install the binary, the pinning library, its shell
#                   completions and its man pages under $(DESTDIR)$(PREFIX) (see "Installing" below)

CARGO ?= cargo
export RUSTDOCFLAGS ?= -D warnings

.PHONY: tune test setup setup-test build fmt-check clippy tests bench-smoke docs pool-package \
	loom fuzz-smoke windows-tests-build \
	install install-files uninstall vm-tests vm-run vm-shell windows test-windows

tune: setup build
	./target/release/coretune tune

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

build:
	$(CARGO) build --release --locked -p coretune -p coretune-pin

# What times nothing (the Windows tests' build, the loom models, the fuzz smoke run) runs in an
# idle lane beside the Linux test pass (scripts/idle-lane.sh): on CPU time the tests leave idle,
# at the lowest CPU and I/O priority, so that it neither slows nor disturbs them. After the Linux
# pass the Windows tests run under Wine, once the lane's Windows build is done (windows.sh waits
# for it), while the lane goes on with loom and the fuzz run.
test: setup-test fmt-check clippy
	scripts/idle-lane.sh target/idle-lane.log \
		'$(MAKE) --no-print-directory windows-tests-build loom fuzz-smoke' \
		sh -c '$(MAKE) --no-print-directory tests bench-smoke docs pool-package && \
			scripts/windows.sh run-tests'
# No incremental caches in a one-off full run: they were 2 GB of disk that nothing reads again.
test: export CARGO_INCREMENTAL = 0
# One test pass, not a debug and a release one (which took 6 of make test's 41 minutes for no
# check the other lacks): optimised, as the VM guests and the timing-sensitive tests want, and
# with the debug pass's checks, debug assertions and overflow checks, kept on (in the loom
# models too). The benchmark smoke run builds with the same settings, so it reuses this build.
# `cargo test --release` alone builds without them (the release profile users get).
test: export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS = true
test: export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS = true
# No thin LTO across a crate's codegen units in this build: less to compile, and the tests do not
# need the last percent of speed it gives (the release profile users get keeps it).
test: export CARGO_PROFILE_RELEASE_LTO = off

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# CORETUNE_TEST_STRICT=1: a test that finds a tool missing fails instead of skipping (the
# set-up installs every one: a skip here would pass having checked nothing).
tests:
	CORETUNE_TEST_STRICT=1 $(CARGO) test --locked --workspace --release

# Benchmarks compile and run once at a tiny size (they print their own numbers under `--bench`).
bench-smoke:
	$(CARGO) test --locked --workspace --release --benches

docs:
	$(CARGO) doc --locked --workspace --no-deps

# The pool's loom models (the sleep protocol, the latch, the submitters' rings, the throttle):
# every interleaving up to loom's bound. `--cfg loom` rebuilds everything, so in a folder of its
# own; LOOM_MAX_PREEMPTIONS=3 bounds the models that set no bound themselves, as loom's docs
# advise for CI (2–3 catch most bugs; unbounded, the models run for over 10 minutes).
loom:
	RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
		$(CARGO) test --locked --release -p coretune-pool --lib loom

# Every fuzz target built (with the coverage flags cargo-fuzz uses, on the stable toolchain) and
# run for 10 s from its seeds (scripts/fuzz.sh; longer: scripts/fuzz.sh 600).
fuzz-smoke:
	scripts/fuzz.sh 10

# coretune-pool as crates.io would ship it: packaged with its licenses, and the README's examples
# compiled as pasted by an outside crate (scripts/check-pool-package.sh).
pool-package:
	CARGO='$(CARGO)' scripts/check-pool-package.sh

# Windows (x86_64-pc-windows-gnu), built here and run under Wine (scripts/windows.sh: it installs
# Debian's Rust 1.96 with its std source, mingw and Wine, and cross-builds hwloc once).
#   make windows        target/x86_64-pc-windows-gnu/release/coretune.exe
#   make test-windows   the workspace's tests for Windows under Wine (built in target/windows),
#                       then that coretune.exe checked from Linux (tests/windows_wine.rs)
windows:
	scripts/windows.sh build

test-windows:
	scripts/windows.sh test

windows-tests-build:
	scripts/windows.sh build-tests

# Live tests on simulated multi-socket machines (QEMU guests, scripts/vm/): part of `make tests`;
# these run them alone. `make vm-run PAYLOAD=smt` boots one payload (a name in
# scripts/vm/payloads/ or a path to your own) and prints its console; `make vm-shell` boots that
# payload's machine with a shell on its console instead (the payload is /payloads/NAME.sh there).
PAYLOAD ?= smt
vm-tests: setup-test
	$(CARGO) test --locked --release -p coretune --test cli vm:: -- --nocapture

vm-run: setup-test build
	scripts/vm/vm.sh run '$(PAYLOAD)'

vm-shell: setup-test build
	scripts/vm/vm.sh shell '$(PAYLOAD)'

# Installing: the binary, the pinning library (lib/coretune/libcoretune_pin.so, where coretune
# looks for it from bin/: ../lib/coretune/), the bash, zsh and fish completions and the man
# pages (coretune.1 and one page per subcommand) where those shells and man look for them. PREFIX is where they go
# (/usr/local unless a package manager says otherwise), DESTDIR a staging root prepended to it
# (packagers: `make install DESTDIR=pkg PREFIX=/usr`). `install-files` copies the binary named by
# CORETUNE without building it, so a binary built elsewhere can be installed (and the tests can
# install the one they built); completions and man pages are generated by running that binary
# (`coretune completions SHELL`, `coretune man --out DIR`), so they always describe it.
PREFIX ?= /usr/local
DESTDIR ?=
CORETUNE ?= target/release/coretune
# The pinning library cargo builds next to the binary.
PINLIB ?= $(dir $(CORETUNE))libcoretune_pin.so
# The helper that starts a measured program, so that its peak memory is its own.
EXECHELPER ?= $(dir $(CORETUNE))coretune-exec
BINDIR = $(DESTDIR)$(PREFIX)/bin
LIBDIR = $(DESTDIR)$(PREFIX)/lib/coretune
BASHDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
MAN1DIR = $(DESTDIR)$(PREFIX)/share/man/man1

# Programs are installed stripped (`strip`, measured on a release build: 55 MB → 9.1 MB for the
# binary, which carries the pinning library, 4.4 MB → 0.34 MB for the library preloaded into
# every pinned program). KEEP_DEBUG=1 keeps their debug information apart,
# in a `.debug` folder beside each (`bin/.debug/coretune.debug`), linked from the stripped file
# (`.gnu_debuglink`), where gdb finds it on its own.
STRIP ?= strip
OBJCOPY ?= objcopy
KEEP_DEBUG ?=
define install-program
	install -Dm755 '$(1)' '$(2)'
	if [ -n '$(KEEP_DEBUG)' ]; then \
	  debug="$$(dirname '$(2)')/.debug/$$(basename '$(2)').debug" && \
	  mkdir -p "$$(dirname "$$debug")" && \
	  $(OBJCOPY) --only-keep-debug '$(2)' "$$debug" && chmod 644 "$$debug" && \
	  $(STRIP) '$(2)' && $(OBJCOPY) --add-gnu-debuglink="$$debug" '$(2)'; \
	else \
	  $(STRIP) '$(2)'; \
	fi
endef

# After the build, not beside it (a parallel make would copy a binary still being linked).
install: setup build
	$(MAKE) --no-print-directory install-files

# The generated files are staged in a temporary folder first, so that a failing `coretune` stops
# the install instead of leaving an empty completion file behind.
install-files:
	$(call install-program,$(CORETUNE),$(BINDIR)/coretune)
	$(call install-program,$(PINLIB),$(LIBDIR)/libcoretune_pin.so)
	$(call install-program,$(EXECHELPER),$(LIBDIR)/coretune-exec)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	'$(CORETUNE)' completions bash > "$$tmp/coretune" && \
	'$(CORETUNE)' completions zsh > "$$tmp/_coretune" && \
	'$(CORETUNE)' completions fish > "$$tmp/coretune.fish" && \
	'$(CORETUNE)' man --out "$$tmp/man" && \
	install -Dm644 "$$tmp/coretune" '$(BASHDIR)/coretune' && \
	install -Dm644 "$$tmp/_coretune" '$(ZSHDIR)/_coretune' && \
	install -Dm644 "$$tmp/coretune.fish" '$(FISHDIR)/coretune.fish' && \
	install -Dm644 -t '$(MAN1DIR)' "$$tmp"/man/*.1

# Removes exactly what install-files installed; the folders stay. The man pages are the ones the
# installed binary (else CORETUNE) writes; with neither left to ask, coretune.1 and coretune-*.1.
uninstall:
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	if '$(BINDIR)/coretune' man --out "$$tmp" 2>/dev/null || \
	   '$(CORETUNE)' man --out "$$tmp" 2>/dev/null; then \
	  for page in "$$tmp"/*.1; do rm -f '$(MAN1DIR)'/"$${page##*/}"; done; \
	else \
	  rm -f '$(MAN1DIR)/coretune.1' '$(MAN1DIR)'/coretune-*.1; \
	fi
	rm -f '$(BINDIR)/.debug/coretune.debug' '$(LIBDIR)/.debug/libcoretune_pin.so.debug' \
	  '$(LIBDIR)/.debug/coretune-exec.debug'
	rm -f '$(BINDIR)/coretune' '$(LIBDIR)/libcoretune_pin.so' '$(LIBDIR)/coretune-exec' '$(BASHDIR)/coretune' '$(ZSHDIR)/_coretune' \
	  '$(FISHDIR)/coretune.fish'
