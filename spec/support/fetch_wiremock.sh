#!/usr/bin/env bash
# Puts WireMock's standalone jar, as the npm package `wiremock` ships it,
# at DEST/wiremock-standalone.jar, for the specs that check the mock
# against the real WireMock (spec/compat/). The package's tarball is
# downloaded from the npm registry once and checked against the SHA-512
# the registry publishes for it (its `dist.integrity`, pinned here), so
# neither npm nor Node.js is needed; nothing is installed.
#
# usage: spec/support/fetch_wiremock.sh DEST
set -euo pipefail
VERSION=3.13.2
SHA512=624a8feaa421552e39fd28c6d6ccf9ad05d0a75f4d0969042b281bd8e279cc62ac4b90d86532d8a1d907eb1e48146e3742d572792bf50b9a1eb385a1837d5f96
URL=https://registry.npmjs.org/wiremock/-/wiremock-$VERSION.tgz
dest=$1
jar=$dest/wiremock-standalone.jar
[[ -e $dest/.wiremock-$VERSION && -f $jar ]] && exit 0
command -v java >/dev/null \
  || { echo "fetch_wiremock: java is not installed (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/wiremock.tgz" "$URL" \
  || { echo "fetch_wiremock: downloading $URL failed" >&2; exit 1; }
echo "$SHA512  $work/wiremock.tgz" | sha512sum -c --quiet - \
  || { echo "fetch_wiremock: $URL is not the tarball the registry published" >&2; exit 1; }
tar -xzf "$work/wiremock.tgz" -C "$work"
cp "$work/package/build/wiremock-standalone-$VERSION.jar" "$jar"
touch "$dest/.wiremock-$VERSION"
