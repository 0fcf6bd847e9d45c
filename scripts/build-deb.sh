#!/usr/bin/env bash
# `make deb`: builds dist/chatlink_<version>_amd64.deb from a release build with the Swift
# standard library linked statically (scripts/build-release.sh), so the package depends only on
# Debian libraries.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/ChatLinkAPI/Version.swift)
[ -n "$version" ] || { echo "build-deb: cannot read the version" >&2; exit 1; }

# chatlinkd with the Swift runtime linked statically; chatlinkctl a static PIE (see there).
bin="$repo/.build/deb/bin"
scripts/build-release.sh "$bin" chatlinkd chatlinkctl

stage="$repo/.build/deb/chatlink_${version}_amd64"
rm -rf "$stage"
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/usr/lib/sysusers.d" \
  "$stage/usr/lib/tmpfiles.d" "$stage/etc/chatlink" "$stage/usr/share/doc/chatlink" \
  "$stage/usr/share/man/man1" "$stage/usr/share/man/man5" "$stage/usr/share/man/man8" \
  "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
  "$stage/usr/share/lintian/overrides"

install -m 0755 "$bin/chatlinkd" "$bin/chatlinkctl" "$stage/usr/bin/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/chatlinkd" "$stage/usr/bin/chatlinkctl"
for f in "$stage"/usr/bin/*; do
  if readelf -d "$f" | grep -E '\((RPATH|RUNPATH)\)' >/dev/null; then
    echo "build-deb: $f carries an RPATH/RUNPATH (Debian policy 10.2)" >&2
    exit 1
  fi
done
install -m 0644 packaging/chatlinkd.service packaging/chatlinkd.socket \
  packaging/chatlinkd@.service packaging/chatlinkd@.socket "$stage/lib/systemd/system/"
install -m 0644 packaging/sysusers-chatlink.conf "$stage/usr/lib/sysusers.d/chatlink.conf"
install -m 0644 packaging/tmpfiles-chatlink.conf "$stage/usr/lib/tmpfiles.d/chatlink.conf"
install -m 0644 config/chatlinkd.conf "$stage/etc/chatlink/chatlinkd.conf"
install -m 0644 completions/chatlinkctl.bash "$stage/usr/share/bash-completion/completions/chatlinkctl"
install -m 0644 completions/_chatlinkctl "$stage/usr/share/zsh/vendor-completions/_chatlinkctl"
install -m 0644 packaging/debian/copyright "$stage/usr/share/doc/chatlink/copyright"
install -m 0644 packaging/debian/lintian-overrides "$stage/usr/share/lintian/overrides/chatlink"
sed "s/@VERSION@/$version/g" packaging/debian/changelog | gzip -9n >"$stage/usr/share/doc/chatlink/changelog.gz"
for page in man/chatlinkctl.1:man1 man/chatlinkd.conf.5:man5 man/chatlinkd.8:man8; do
  src=${page%%:*}
  gzip -9n <"$src" >"$stage/usr/share/man/${page##*:}/$(basename "$src").gz"
done
chmod 0644 "$stage"/usr/share/man/*/*.gz "$stage/usr/share/doc/chatlink/changelog.gz"

# Dependencies: the Debian package of every shared library the binaries need: those they link
# (NEEDED) and libssl, which chatlinkd loads with dlopen for wss:// (Transport/OpenSSLLibrary.swift
# names the soname of the OpenSSL major version its headers describe, as this does).
ssl_major=$(sed -n 's/^# *define OPENSSL_VERSION_MAJOR *\([0-9][0-9]*\).*/\1/p' /usr/include/openssl/opensslv.h)
[ -n "$ssl_major" ] || { echo "build-deb: cannot read OPENSSL_VERSION_MAJOR" >&2; exit 1; }
depends=$({ for f in "$stage"/usr/bin/*; do objdump -p "$f" | awk '/NEEDED/ {print $2}'; done
  echo "libssl.so.$ssl_major"; } | sort -u |
  while read -r lib; do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
    [ -n "$path" ] || { echo "build-deb: $lib is not a system library" >&2; exit 1; }
    # With merged /usr, dpkg may know the file under /lib or under /usr/lib.
    real=$(readlink -f "$path")
    pkg=""
    for candidate in "$path" "$real" "${real#/usr}" "/usr$path"; do
      pkg=$(dpkg -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || { echo "build-deb: no package owns $lib" >&2; exit 1; }
    echo "$pkg"
  done | sort -u)
case "$depends" in *swift*) echo "build-deb: a Swift runtime library is still dynamic" >&2; exit 1 ;; esac
deplist=$(for p in $depends; do
  v=$(dpkg-query -W -f='${Version}' "$p" | sed 's/-[^-]*$//')
  echo "$p (>= $v)"
done | paste -sd, - | sed 's/,/, /g')
deplist="$deplist, init-system-helpers (>= 1.54~), systemd | systemd-standalone-sysusers | systemd-sysusers"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$deplist/" \
  packaging/debian/control.in >"$stage/DEBIAN/control"
install -m 0644 packaging/debian/conffiles "$stage/DEBIAN/conffiles"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/md5sums"

mkdir -p dist
deb="dist/chatlink_${version}_amd64.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "build-deb: $deb ($(du -h "$deb" | cut -f1)); Depends: $deplist"
