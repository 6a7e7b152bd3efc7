#!/usr/bin/env bash
# Flame graphs are rendered by an existing renderer, inferno (crates.io), never by home-made code.
# Installs it with cargo into ~/.cargo/bin (fairmark looks there too) when it is missing and cargo exists;
# otherwise says so: `--profile cpu` then reports itself unavailable, with this hint.
set -euo pipefail
if command -v inferno-flamegraph >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/inferno-flamegraph" ]; then
  exit 0
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "fairmark: inferno (flame graphs) not installed and no cargo to build it: 'cargo install inferno'" >&2
  exit 0
fi
echo "fairmark: installing inferno (flame graph renderer) with cargo, about 1-2 minutes"
cargo install --quiet --locked inferno
