#!/usr/bin/env bash
# Installs json-server 0.17.4 into DEST/node_modules, for the spec that
# checks moonport's json-server mode against the real one
# (spec/compat/json_server_diff_spec.lua). `npm ci` installs exactly what
# spec/support/json-server/package-lock.json pins: every transitive
# package, its version, its tarball's URL and its SHA-512. Nothing is
# installed outside DEST; a DEST already holding this lockfile's install is
# left as it is.
#
# usage: spec/support/fetch_json_server.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")/json-server" && pwd)
dest=$1
stamp=$dest/.installed-$(sha256sum "$here/package-lock.json" | cut -c1-16)
[[ -e $stamp && -f $dest/node_modules/json-server/lib/cli/bin.js ]] && exit 0
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "fetch_json_server: node and npm are not installed (apt-get install nodejs npm)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) \
  || { echo "fetch_json_server: npm ci failed" >&2; exit 1; }
touch "$stamp"
