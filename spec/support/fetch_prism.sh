#!/usr/bin/env bash
# Installs Stoplight Prism CLI 5.14.2 into DEST/node_modules, for the spec
# that checks moonport's OpenAPI mode against the real one
# (spec/compat/prism_diff_spec.lua) and for bench/openapi/run. `npm ci`
# installs exactly what spec/support/prism/package-lock.json pins: every
# transitive package, its version, its tarball's URL and its SHA-512.
# Nothing is installed outside DEST; a DEST already holding this
# lockfile's install is left as it is.
#
# usage: spec/support/fetch_prism.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")/prism" && pwd)
dest=$1
stamp=$dest/.installed-$(sha256sum "$here/package-lock.json" | cut -c1-16)
bin=$dest/node_modules/@stoplight/prism-cli/dist/index.js
[[ -e $stamp && -f $bin ]] && exit 0
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "fetch_prism: node and npm are not installed (apt-get install nodejs npm)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) \
  || { echo "fetch_prism: npm ci failed" >&2; exit 1; }
[[ -f $bin ]] || { echo "fetch_prism: no $bin after npm ci" >&2; exit 1; }
touch "$stamp"
