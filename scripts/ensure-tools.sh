#!/usr/bin/env bash
# Installs the Debian packages listed in a file, in one apt-get call, only when some are missing.
# Not root, or not a Debian-like system: say exactly what to run and fail, rather than half-install.
set -euo pipefail
list=${1:?usage: ensure-tools.sh PACKAGE-LIST}
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "fairmark: not a Debian-like system; install the equivalents of: ${wanted[*]}" >&2
  exit 0
fi
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "fairmark: missing packages: ${missing[*]}" >&2
  echo "fairmark: run as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 3
fi
echo "fairmark: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
