# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# lib.sh - shared by the host-side tools: where things are and how to say so.

MDR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Cache outside the repository, kept between runs (kernel source tree,
# KUnit build, guest initramfs). Override with MDR_CACHE.
if [ -z "${MDR_CACHE:-}" ]; then
	if [ -w /var/cache ] || [ -w /var/cache/mdroute ]; then
		MDR_CACHE=/var/cache/mdroute
	else
		MDR_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/mdroute
	fi
fi

mdr_die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# mdr_kver: the Debian kernel to build against and boot: one with both
# /lib/modules/<ver>/build and /boot/vmlinuz-<ver>. KVER names it, or a
# series of them (KVER=6.12: the newest 6.12.*); without KVER, the one
# Debian's linux-image-amd64 stands for (what Debian 12 boots by default),
# else the newest. Never `uname -r`: the build machine may run some other
# kernel.
mdr_kver_usable() {
	[ -e "/lib/modules/$1/build" ] && [ -e "/boot/vmlinuz-$1" ]
}

mdr_kver() {
	local v best= want=${KVER:-}
	if [ -n "$want" ] && [ -e "/lib/modules/$want/build" ]; then
		echo "$want"
		return
	fi
	if [ -z "$want" ]; then
		v=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
			sed -n 's/.*linux-image-\([^ ,]*\).*/\1/p')
		if [ -n "$v" ] && mdr_kver_usable "$v"; then
			echo "$v"
			return
		fi
	fi
	for v in /lib/modules/*/build; do
		[ -e "$v" ] || continue
		v=${v#/lib/modules/}
		v=${v%/build}
		mdr_kver_usable "$v" || continue
		case $v in "$want" | "$want".* | "$want"-*) ;; *) continue ;; esac
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
	done
	[ -n "$best" ] && { echo "$best"; return; }
	[ -n "$want" ] &&
		mdr_die "KVER=$want: no kernel $want or $want.* with /lib/modules/<ver>/build and /boot/vmlinuz-<ver>; run tools/install-deps"
	mdr_die "no kernel with both /lib/modules/<ver>/build and /boot/vmlinuz-<ver>; run tools/install-deps"
}

# mdr_kernel_tree: make sure Debian's linux-source-6.1 is extracted in
# $MDR_CACHE/linux-source-6.1 (KUnit, checkpatch, sparse use it), re-extract
# when the package changes. Prints the tree's path.
mdr_kernel_tree() {
	local tarball=/usr/src/linux-source-6.1.tar.xz tree=$MDR_CACHE/linux-source-6.1 ver
	[ -r "$tarball" ] || mdr_die "$tarball missing; run tools/install-deps"
	mkdir -p "$MDR_CACHE"
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || stat -c %Y "$tarball")
	(
		flock 8
		if [ "$(cat "$tree/.mdr-source-version" 2>/dev/null)" != "$ver" ]; then
			echo "extracting linux-source-6.1 $ver into $MDR_CACHE" >&2
			rm -rf "$tree"
			tar -C "$MDR_CACHE" -xf "$tarball" &&
				echo "$ver" >"$tree/.mdr-source-version"
		fi
	) 8>"$MDR_CACHE/tree.lock"
	[ -s "$tree/.mdr-source-version" ] || mdr_die "cannot extract $tarball"
	echo "$tree"
}

# mdr_summary FILE LAYER PASSED FAILED SKIPPED: record a layer's counts for
# tools/check, which adds them up.
mdr_summary() {
	[ -n "$1" ] || return 0
	printf '%s %d %d %d\n' "$2" "$3" "$4" "$5" >>"$1"
}
