# agent-q: the single entry point. `make help` lists the targets.

EMACS  ?= emacs
CARGO  ?= cargo
# The Cargo profile that builds the module and the relay: release ships; fast (no LTO) is for
# working on agent-q, when a rebuild should take seconds.
PROFILE ?= release
# The module's name follows Emacs's module-file-suffix (.so, .dylib, .dll), which agent-q.el loads;
# cargo names the cdylib after the platform.
MODULE_SUFFIX := $(shell $(EMACS) --batch -Q --eval '(princ (or module-file-suffix ".so"))' 2>/dev/null || echo .so)
MODULE := lisp/agent-q-core$(MODULE_SUFFIX)
ifeq ($(OS),Windows_NT)
CDYLIB := agent_q.dll
else ifeq ($(shell uname -s),Darwin)
CDYLIB := libagent_q.dylib
else
CDYLIB := libagent_q.so
endif
# The stdio relay to Emacs's MCP server, for MCP clients that only start a command.
RELAY  := bin/agent-q-mcp
LISP   := $(wildcard lisp/*.el)
# The byte-compiled Lisp, beside the sources, which is what `(require 'agent-q)' loads. A
# stamp stands for all of it: one Emacs compiles every file when any source changed, because
# a file compiles in the macros and inline functions of those it requires. Native compilation
# is left to Emacs (its deferred compilation of the loaded .elc files, see the manual).
ELC    := target/lisp-compiled.stamp
RUST   := Cargo.toml Cargo.lock $(wildcard src/*.rs src/*/*.rs crates/*/Cargo.toml crates/*/src/*.rs crates/*/src/*/*.rs crates/*/src/*/*/*.rs)
# The Info manual, built from doc/agent-q.texi (C-h i m agent-q once agent-q is loaded).
INFO   := doc/agent-q.info
BATCH  := $(EMACS) --batch -Q -L lisp -L tests
# Emacs 30.1 from Debian 12's backports, unpacked beside the system's Emacs (28.2 on Debian 12)
# by scripts/ensure-emacs30.sh: the ERT suites and the byte-compilation run on both. `make test
# EMACS30=` leaves the second run out (and says so).
EMACS30 ?= target/emacs-30/bin/emacs

.PHONY: help deps build info test test-rust test-lisp test-lisp-30 run lint lint-30 clean bench

help:  ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

deps:  ## Install what is missing (emacs-nox, emacs-el, texinfo; tmux for tests) with apt-get
	@scripts/ensure-deps.sh

build: $(MODULE) $(RELAY) $(ELC) $(INFO)  ## Build the Rust module (lisp/agent-q-core.so; M-x agent-q-module-compile runs this), the MCP relay (bin/agent-q-mcp), the byte-compiled Lisp and the manual

info: $(INFO)  ## Build the Info manual doc/agent-q.info from doc/agent-q.texi

$(INFO): doc/agent-q.texi
	@command -v makeinfo >/dev/null 2>&1 || scripts/ensure-deps.sh
	makeinfo --no-split -o $@ $<

# One cargo build of the workspace makes both; the relay is replaced by a rename, so that a
# client running the old one is not disturbed ("text file busy").
$(MODULE): $(RUST)
	@scripts/ensure-deps.sh
	$(CARGO) build --profile $(PROFILE) --workspace
	cp target/$(PROFILE)/$(CDYLIB) $(MODULE)
	mkdir -p bin && cp target/$(PROFILE)/agent-q-mcp $(RELAY).tmp && mv -f $(RELAY).tmp $(RELAY)

$(RELAY): $(MODULE)
	@test -x $(RELAY) || { mkdir -p bin && cp target/$(PROFILE)/agent-q-mcp $(RELAY).tmp && mv -f $(RELAY).tmp $(RELAY); }

# Compiling loads agent-q (and so the module); load-prefer-newer, so that a file required while
# compiling is the current source, never an older .elc. A compilation error stops make.
$(ELC): $(LISP) | $(MODULE)
	$(EMACS) --batch -Q -L lisp --eval '(setq load-prefer-newer t)' -f batch-byte-compile $(LISP)
	@mkdir -p target && touch $@

test: test-rust test-lisp test-lisp-30  ## Run every test: cargo test, then the ERT suites in emacs --batch -Q, on the system's Emacs and on Emacs 30

test-rust:
	@scripts/ensure-deps.sh --test
	$(CARGO) test --workspace

test-lisp: $(MODULE) $(ELC) $(INFO)
	@scripts/ensure-deps.sh --test
	$(BATCH) -l tests/run-tests.el

test-lisp-30: $(MODULE) $(ELC) $(INFO)
ifeq ($(EMACS30),)
	@echo "make: the ERT suites were not run on Emacs 30 (EMACS30 is empty)"
else
	@scripts/ensure-deps.sh --test
	@test "$(EMACS30)" != target/emacs-30/bin/emacs || scripts/ensure-emacs30.sh >/dev/null
	$(EMACS30) --batch -Q -L lisp -L tests -l tests/run-tests.el
endif

run: $(MODULE) $(ELC)  ## Start Emacs with agent-q loaded and a short demonstration
	$(EMACS) -Q -L lisp -l agent-q-demo -f agent-q-demo

lint: $(MODULE) lint-30  ## clippy -D warnings, rustfmt --check, byte-compile (warnings are errors, on both Emacsen), checkdoc, package-lint, headers, makeinfo without warnings
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) fmt --all --check
	@scripts/ensure-deps.sh --lint
	$(BATCH) -l scripts/lint.el $(LISP)
	@command -v makeinfo >/dev/null 2>&1 || scripts/ensure-deps.sh
	@out=$$(makeinfo --no-split -o /dev/null doc/agent-q.texi 2>&1) && [ -z "$$out" ] \
	  || { echo "$$out"; echo "makeinfo: doc/agent-q.texi must build without warnings"; exit 1; }

lint-30: $(MODULE)
ifeq ($(EMACS30),)
	@echo "make: the Lisp was not linted on Emacs 30 (EMACS30 is empty)"
else
	@scripts/ensure-deps.sh --lint
	@test "$(EMACS30)" != target/emacs-30/bin/emacs || scripts/ensure-emacs30.sh >/dev/null
	$(EMACS30) --batch -Q -L lisp -L tests -l scripts/lint.el $(LISP)
endif

bench: $(MODULE) $(ELC)  ## Run the benchmarks and write bench/RESULTS.md (see bench/README.md)
	@scripts/ensure-deps.sh --bench
	@# The module with what only the benchmarks call (agent-q--core-diff-unified).
	$(CARGO) build --profile $(PROFILE) -p agent-q --features bench
	cp target/$(PROFILE)/libagent_q.so $(MODULE)
	$(EMACS) --batch -Q -L lisp -l bench/run.el

clean:  ## Remove build products
	$(CARGO) clean
	rm -f $(MODULE) $(RELAY) $(INFO) $(ELC) lisp/*.elc tests/*.elc
