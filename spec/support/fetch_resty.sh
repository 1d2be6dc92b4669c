#!/usr/bin/env bash
# Puts the Lua files of Debian's OpenResty client libraries (lua-nginx-redis,
# lua-nginx-memcached, lua-nginx-websocket) under DEST/nginx/, for the specs
# that run them unmodified inside moonport. The packages depend on
# nginx-extras, which the specs do not need: where a package is not
# installed, its .deb is downloaded (apt-get download) and unpacked
# (dpkg -x), as DESIGN.md allows; nothing is installed.
#
# usage: spec/support/fetch_resty.sh DEST
set -euo pipefail
dest=$1
mkdir -p "$dest"
for pkg in lua-nginx-redis lua-nginx-memcached lua-nginx-websocket; do
  [[ -e $dest/.$pkg ]] && continue
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == "install ok installed" ]]; then
    root=/
  else
    root=$dest/unpacked
    work=$(mktemp -d)
    (cd "$work" && apt-get download -q "$pkg" >/dev/null 2>&1) \
      || { echo "fetch_resty: apt-get download $pkg failed (apt-get update first?)" >&2; rm -rf "$work"; exit 1; }
    dpkg -x "$work"/"$pkg"_*.deb "$root"
    rm -rf "$work"
  fi
  while read -r file; do
    case $file in
      /usr/share/lua/5.1/nginx/*.lua)
        rel=${file#/usr/share/lua/5.1/}
        mkdir -p "$dest/$(dirname "$rel")"
        cp "$root$file" "$dest/$rel"
        ;;
    esac
  done < <(if [[ $root == / ]]; then dpkg -L "$pkg"; else (cd "$root" && find . -type f | sed 's/^\.//'); fi)
  touch "$dest/.$pkg"
done
