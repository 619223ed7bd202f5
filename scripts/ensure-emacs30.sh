#!/usr/bin/env bash
# Put Emacs 30 beside the system's Emacs, for the tests and the lint, and print the command that
# starts it.
#
# Debian 12 ships Emacs 28.2; Emacs 30.1 is in bookworm-backports. The two cannot be installed
# side by side as packages (and elpa-compat, elpa-flycheck pull 28 back in), so this unpacks the
# pinned backports packages under target/emacs-30/root without installing them: apt-get fetches
# them with a private source list and private package lists (the system's apt configuration is
# not touched), dpkg-deb unpacks them, and the shared libraries Emacs 30 needs are installed
# from Debian 12 itself (the backport is built against them). target/emacs-30/bin/emacs sets
# the variables that point Emacs at its unpacked files, and child Emacsen started as
# `invocation-directory'/`invocation-name' inherit them.
#
# Idempotent: a copy of the pin below inside the tree marks a complete install. Set
# AGENT_Q_NO_APT=1 to never call apt-get (then this fails when something is missing).
set -euo pipefail

version='1:30.1+1-6~bpo12+1'
release=30.1
root_dir=$(cd "$(dirname "$0")/.." && pwd)
dir="$root_dir/target/emacs-30"
wrapper="$dir/bin/emacs"

if [ -x "$wrapper" ] && [ "$(cat "$dir/agent-q-pin" 2>/dev/null)" = "$version" ]; then
  echo "$wrapper"
  exit 0
fi
if [ -n "${AGENT_Q_NO_APT:-}" ]; then
  echo "agent-q: Emacs $release is not unpacked in $dir (AGENT_Q_NO_APT is set, not fetching)" >&2
  exit 1
fi
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

echo "agent-q: unpacking Emacs $release from bookworm-backports into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs" "$dir/root" "$dir/bin"
cat >"$dir/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm-backports main
EOF
apt_opts=(-o "Dir::Etc::sourcelist=$dir/apt/sources.list" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" update -qq >&2
packages=(emacs-nox emacs-bin-common emacs-common emacs-el)
(cd "$dir/debs" && apt-get "${apt_opts[@]}" download -qq "${packages[@]/%/=$version}" >&2)
for deb in "$dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dir/root"
done

# The libraries emacs-nox depends on, by package name, from Debian 12's own archive.
libs=()
for dep in $(dpkg-deb -f "$dir"/debs/emacs-nox_*.deb Depends | tr ',' '\n' \
               | sed -e 's/([^)]*)//g' -e 's/|.*//' -e 's/ //g'); do
  case "$dep" in emacs-*) continue ;; esac
  dpkg-query -W -f='${Status}' "$dep" 2>/dev/null | grep -q 'install ok installed' || libs+=("$dep")
done
if [ ${#libs[@]} -gt 0 ]; then
  echo "agent-q: installing the libraries Emacs $release needs: ${libs[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${libs[@]}" >&2
fi

# Emacs finds its dump file beside the executable; the data, the exec directory and the Lisp
# come from the variables the wrapper sets.
r="$dir/root"
cp "$r"/usr/libexec/emacs/$release/"$multiarch"/emacs-*.pdmp "$r/usr/bin/emacs-nox.pdmp"
cat >"$wrapper" <<EOF
#!/bin/sh
# Emacs $release unpacked from bookworm-backports (scripts/ensure-emacs30.sh).
r='$r'
export EMACSDATA="\$r/usr/share/emacs/$release/etc" EMACSDOC="\$r/usr/share/emacs/$release/etc"
export EMACSPATH="\$r/usr/libexec/emacs/$release/$multiarch"
export EMACSLOADPATH="\$r/usr/share/emacs/$release/lisp"
exec "\$r/usr/bin/emacs-nox" "\$@"
EOF
chmod +x "$wrapper"
got=$("$wrapper" --batch -Q --eval '(princ emacs-version)' 2>&1 || true)
if [ "$got" != "$release" ]; then
  echo "agent-q: the unpacked Emacs does not start (it printed: $got)" >&2
  exit 1
fi
echo "$version" >"$dir/agent-q-pin"
echo "agent-q: Emacs $release is $wrapper ($arch)" >&2
echo "$wrapper"
