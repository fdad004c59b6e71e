#!/bin/bash
# Build the guest kernels from Debian's linux-source-6.1 and -6.12.
#
#   kernel.sh build VARIANT[-6.12]        bzImage, cached by a hash of its inputs
#       stock; patched (stock + the series, nothing else: what is measured);
#       kunit (patched + the KUnit suites, kunit.config); debug (kunit +
#       debug.config); stock-bench, patched-bench (plus the hooks in bench/
#       and bench.config, for make bench-rng and bench-wg); mutant-NAME (kunit +
#       mutants/NAME.patch, for make mutants).  A name ending in -6.12
#       builds from 6.12, else 6.1.
#   kernel.sh build debian|debian-cloud|debian-cloud-6.12
#       Debian's own binary kernels, not built but downloaded (apt-get
#       download of what linux-image-amd64, linux-image-cloud-amd64 and
#       linux-image-6.12-cloud-amd64 depend on today), cached by package
#       version, with the modules the guests need in modules.cpio
#   kernel.sh deb patched|stock[-6.12]     an installable linux-image .deb of
#       that build (the kernel's own bindeb-pkg), cached by the same hash,
#       linked as build/debs/linux-image-VARIANT.deb
#   kernel.sh tree [6.12]                  a tree with the series applied, to edit
#   kernel.sh refresh [6.12]               rewrite the series from that tree
#   kernel.sh checkpatch [6.12]            scripts/checkpatch.pl --strict on the series
#
# Each version has its folder: VERSION/series names its patches in order,
# VERSION/bench/ and VERSION/mutants/ hold the rest, and VERSION/*.config
# adds to the fragments here where the versions differ.
#
# The source is extracted once into a git repository under $FORKSAFE_CACHE
# (outside any clone), tagged forksafe-base.  Each variant builds in its own
# git worktree of it, so a rebuild after a patch change recompiles only what
# the patches touched, and an unchanged rebuild is a hash lookup.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${FORKSAFE_CACHE:-/var/cache/forksafe}
out=${FORKSAFE_BUILD:-$here/../build}
jobs=$(nproc)
VERSIONS="6.1 6.12"

# use_version VERSION: where that version's source, patches and trees are.
# (6.1 keeps the paths it had before 6.12 came, so its cache stays valid.)
use_version() {
	ver=$1
	case " $VERSIONS " in *" $ver "*) ;; *) die "no series for Linux '$ver' (one of: $VERSIONS)" ;; esac
	pkg=linux-source-$ver
	tarball=${LINUX_TARBALL:-/usr/src/$pkg.tar.xz}
	pdir=$here/$ver
	if [ "$ver" = 6.1 ]; then
		base=$cache/src/linux work=$cache/work devtree=${KERNEL_TREE:-$cache/tree}
	else
		base=$cache/src/linux-$ver work=$cache/work/$ver devtree=${KERNEL_TREE:-$cache/tree-$ver}
	fi
	decl_headers=$(cat "$pdir/decl-headers" 2>/dev/null || true)
}

die() { echo "kernel: $*" >&2; exit 1; }
log() { echo "kernel: $*" >&2; }
git_id() { git -c user.name=forksafe -c user.email=forksafe@localhost "$@"; }

# ---- progress ------------------------------------------------------------------
# A step of minutes must not look like a hang.  Each phase says so in one
# line; while one runs, a line every PROGRESS_EVERY seconds (10 on a
# terminal, 50 otherwise, so a log is never silent for a minute) gives the
# kbuild steps done out of those of the last full build (about 1,800 for
# these configs the first time) and the time so far.  V=1 shows make's own
# output instead.
PROGRESS_EVERY=${PROGRESS_EVERY:-50}
[ ! -t 2 ] || PROGRESS_EVERY=10
FULL_BUILD_STEPS=1800

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# The kbuild steps (CC, LD, ...) a build log shows so far.
build_steps() { grep -c '^  [A-Z]' "$1" 2>/dev/null || true; }

# with_progress LABEL LOG CMD...: run CMD, its output to LOG, and report how
# far it got while it runs.  The ticker stops with this shell, however it ends.
with_progress() {
	local label=$1 logfile=$2 ticker rc=0 start=$SECONDS total
	shift 2
	if [ "${V:-0}" = 1 ]; then
		"$@" 2>&1 | tee "$logfile" >&2
		return "${PIPESTATUS[0]}"
	fi
	total=$(cat "$cache/full-build-steps" 2>/dev/null || echo "$FULL_BUILD_STEPS")
	(
		while sleep "$PROGRESS_EVERY" && kill -0 "$$" 2>/dev/null; do
			log "$label: $(build_steps "$logfile") of about $total steps, $(elapsed $((SECONDS - start)))"
		done
	) &
	ticker=$!
	"$@" >"$logfile" 2>&1 || rc=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if [ "$rc" = 0 ]; then
		log "$label: done in $(elapsed $((SECONDS - start)))"
	else
		log "$label: failed after $(elapsed $((SECONDS - start)))"
	fi
	return "$rc"
}

# The fragments and patches that make up a variant: each shared fragment,
# then the version's own beside it if it has one.
fragments() {
	local f
	for f in forksafe $(case "$1" in kunit | debug | mutant-*) echo kunit ;; *-bench) echo bench ;; esac) \
		$([ "$1" != debug ] || echo debug); do
		echo "$here/$f.config"
		[ ! -f "$pdir/$f.config" ] || echo "$pdir/$f.config"
	done
}

patches() {
	local p
	case "$1" in
	stock*) ;;
	*)
		[ -f "$pdir/series" ] || die "kernel-patches/$ver/series is missing"
		while read -r p; do
			case "$p" in ''|'#'*) continue ;; esac
			[ -f "$pdir/$p" ] || die "kernel-patches/$ver/series names $p, which does not exist"
			echo "$pdir/$p"
		done <"$pdir/series"
		;;
	esac
	case "$1" in
	*-bench)
		[ -d "$pdir/bench" ] || die "no benchmark hooks for $ver in kernel-patches/$ver/bench/"
		find "$pdir/bench" -name '*.patch' | sort
		;;
	mutant-*)
		[ -f "$pdir/mutants/${1#mutant-}.patch" ] ||
			die "no mutant named ${1#mutant-} in kernel-patches/$ver/mutants/"
		echo "$pdir/mutants/${1#mutant-}.patch"
		;;
	esac
}

source_version() {
	[ -r "$tarball" ] || die "$tarball is missing: run 'make deps' (package $pkg)"
	dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || stat -c '%s-%Y' "$tarball"
}

# Everything that decides what a variant's bzImage contains.
input_hash() {
	local v=$1 f
	{
		echo "variant $v source $(source_version)"
		sha256sum "${BASH_SOURCE[0]}"
		while read -r f; do sha256sum "$f"; done < <(fragments "$v"; patches "$v")
		echo "declaration-only headers: $decl_headers"
	} | sed "s|$here/||" | sha256sum | cut -c1-16
}

# ---- the pristine source, extracted once -------------------------------------
ensure_base() {
	[ -f "$base/.git/forksafe-ready" ] && return 0
	rm -rf "$base"
	mkdir -p "$base"
	log "extracting $tarball (once, about a minute) into $base"
	tar -xJf "$tarball" -C "$base" --strip-components=1
	log "recording the source in git (once)"
	git -C "$base" init -q
	git -C "$base" add -f -A
	git_id -C "$base" commit -q -m "Debian $pkg $(source_version)"
	# Debian's .gitignore ignores everything at the top level, which would
	# hide new files from 'git add' in the developer tree.
	sed -i '/^# Debian packaging/,$d' "$base/.gitignore"
	git_id -C "$base" commit -q -a -m "forksafe: drop Debian's ignore-everything rule"
	git -C "$base" tag -f forksafe-base >/dev/null
	touch "$base/.git/forksafe-ready"
}

# The series as a commit on forksafe-base.  Applying patches rewrites every
# file they touch, so it happens in a scratch worktree of its own (one at a
# time, under a lock), never in a build tree.
series_commit() {
	local scratch=$work/.series p lock
	exec {lock}>"$work/.series.lock"
	flock "$lock"
	if [ ! -e "$scratch/.git" ]; then
		rm -rf "$scratch"
		git -C "$base" worktree prune
		git -C "$base" worktree add -q --detach "$scratch" forksafe-base
	fi
	git -C "$scratch" am --abort >/dev/null 2>&1 || true
	git -C "$scratch" reset -q --hard forksafe-base
	for p in "$@"; do
		if ! git_id -C "$scratch" am -q --committer-date-is-author-date "$p" >/dev/null 2>&1; then
			git -C "$scratch" am --abort >/dev/null 2>&1 || true
			die "patch kernel-patches/${p#"$here"/} does not apply to $pkg $(source_version)"
		fi
	done
	git -C "$scratch" rev-parse HEAD
}

# ---- stock from the patched tree's objects -------------------------------------
# The series changes few files, but one is include/linux/random.h, which
# 1,167 of 6.1's 1,307 objects include: a stock build after a patched one
# would recompile nearly everything.  What the series adds to such a
# header is declarations only (VERSION/decl-headers lists these headers,
# one a line): prototypes and an unused static inline change no object
# that does not call them, and every file that does is itself changed by
# the series.  So stock builds in the patched tree, and a checkout between
# the two keeps those headers' old times: make recompiles the files the
# series changes, not their includers.  (Measured: every object of such a
# build is byte for byte that of a stock build from scratch but those of
# the changed files; docs/running.md.)

# A header keeps its time only where that is true: when the objects were
# compiled against exactly its new content (back from stock to the same
# series), or when the checkout goes to stock from the series they were
# compiled against (the declarations go, which no unchanged object used).
# A series that changes such a header otherwise gets a new time, and its
# includers recompile.  DIR/.forksafe-compiled records, per header, the
# content the series' last build in DIR compiled against.

# checkout_keeping_headers DIR COMMIT VARIANT: git checkout, the listed
# headers' times kept where the rule above allows.
checkout_keeping_headers() {
	local dir=$1 commit=$2 v=$3 h compiled
	local -A was=()
	for h in $decl_headers; do
		[ ! -f "$dir/$h" ] || was[$h]=$(stat -c %Y "$dir/$h")
	done
	git -C "$dir" checkout -q --detach "$commit"
	for h in "${!was[@]}"; do
		[ -f "$dir/$h" ] || continue
		compiled=$(awk -v h="$h" '$1 == h { print $2 }' "$dir/.forksafe-compiled" 2>/dev/null || true)
		[ -n "$compiled" ] || continue
		if [ "$v" = stock ] || [ "$(sha256sum <"$dir/$h" | cut -c1-64)" = "$compiled" ]; then
			touch -d "@${was[$h]}" "$dir/$h"
		fi
	done
}

# compiled_against DIR VARIANT: after a build of the series, what it compiled against.
compiled_against() {
	local dir=$1 h
	[ "$2" != stock ] || return 0
	for h in $decl_headers; do
		[ ! -f "$dir/$h" ] || echo "$h $(sha256sum <"$dir/$h" | cut -c1-64)"
	done >"$dir/.forksafe-compiled"
}

# build_dir VARIANT: where it builds.  Stock shares patched's tree once
# that has built (above), where the version lists its headers.
build_dir() {
	case "$1" in
	mutant-*) echo "$work/mutant" ;;
	stock) if [ -n "$decl_headers" ] && [ -f "$work/patched/vmlinux" ]; then
		echo "$work/patched"; else echo "$work/stock"; fi ;;
	*) echo "$work/$1" ;;
	esac
}

# A worktree at forksafe-base with the variant's patches applied on top.
# It moves to the series' commit with git checkout, which rewrites only the
# files that differ, so make stays incremental: a reworded commit message
# recompiles nothing, a changed patch only what it changes (re-applying the
# series in place would touch include/linux/random.h, which half the
# kernel includes).
prepare_tree() {
	local v=$1 dir=$2 p applied commit mutant=""
	local -a committed=()
	ensure_base
	mkdir -p "$work"
	if [ ! -e "$dir/.git" ]; then
		rm -rf "$dir"
		git -C "$base" worktree prune
		git -C "$base" worktree add -q --detach "$dir" forksafe-base
	fi
	# A mutant is applied uncommitted on top of the series, so that the
	# next mutant only restores the files this one touched.
	while read -r p; do
		case "$p" in */mutants/*) mutant=$p ;; *) committed+=("$p") ;; esac
	done < <(patches "$v")
	applied=$(cat "${committed[@]}" /dev/null | sha256sum | cut -c1-16)
	if [ "$(cat "$dir/.forksafe-applied" 2>/dev/null)" != "$applied" ]; then
		rm -f "$dir/.forksafe-applied"
		commit=$(series_commit "${committed[@]}")
		git -C "$dir" am --abort >/dev/null 2>&1 || true
		git -C "$dir" diff --quiet HEAD || git -C "$dir" checkout -q -- .
		rm -f "$dir/.forksafe-mutant"
		checkout_keeping_headers "$dir" "$commit" "$v"
		echo "$applied" >"$dir/.forksafe-applied"
	fi
	if [ "$(cat "$dir/.forksafe-mutant" 2>/dev/null)" != "$mutant" ] || [ -z "$mutant" ]; then
		git -C "$dir" diff --quiet HEAD || git -C "$dir" checkout -q -- .
		rm -f "$dir/.forksafe-mutant"
		if [ -n "$mutant" ]; then
			git -C "$dir" apply "$mutant" ||
				die "mutant kernel-patches/${mutant#"$here"/} does not apply on top of the series"
			echo "$mutant" >"$dir/.forksafe-mutant"
		fi
	fi
}

# tinyconfig, the fragments merged on top, then proof that Kconfig kept them.
configure() {
	local v=$1 dir=$2 frag line opt want got missing=()
	make -C "$dir" -s ARCH=x86_64 tinyconfig >/dev/null
	mapfile -t frag < <(fragments "$v")
	(cd "$dir" && scripts/kconfig/merge_config.sh -m .config "${frag[@]}" >merge_config.log 2>&1)
	make -C "$dir" -s ARCH=x86_64 olddefconfig >"$dir/olddefconfig.log" 2>&1
	while read -r line; do
		case "$line" in
		CONFIG_*=*) opt=${line%%=*}; want=$line ;;
		'# CONFIG_'*' is not set') opt=${line#'# '}; opt=${opt%% *}; want='unset' ;;
		*) continue ;;
		esac
		got=$(grep -E "^$opt=|^# $opt is not set" "$dir/.config" || true)
		if [ "$want" = unset ]; then
			case "$got" in ''|'# '*) ;; *) missing+=("$opt (wanted unset, got ${got#*=})") ;; esac
		elif [ "$got" != "$want" ]; then
			missing+=("$opt (wanted ${want#*=}, got ${got:-nothing})")
		fi
	done < <(cat "${frag[@]}")
	if [ "${#missing[@]}" -gt 0 ]; then
		die "Kconfig dropped ${missing[*]}"
	fi
}

# A build from scratch tells later ones how many steps to expect.
full_build_steps() {
	local n
	n=$(build_steps "$1")
	[ "$n" -lt 1000 ] || echo "$n" >"$cache/full-build-steps"
}

# ---- Debian's binary kernels ------------------------------------------------------
# What an operator runs: Debian's kernels, with modules.  The guests need
# virtio's PCI transport and console (the agent's channel), virtio-net and
# WireGuard; those that a kernel does not build in go, with what they depend
# on (depmod's modules.dep, run here on the unpacked package) and
# decompressed, into modules.cpio, which machine.sh appends to the
# initramfs and the guest's init loads in the order of
# /lib/modules/forksafe.load.
DEBIAN_MODULES="virtio_pci virtio_console virtio_net wireguard"

debian_meta() {
	case "$1" in
	debian) echo linux-image-amd64 ;;
	debian-cloud) echo linux-image-cloud-amd64 ;;
	debian-cloud-6.12) echo linux-image-6.12-cloud-amd64 ;;
	*) die "unknown Debian kernel '$1' (debian, debian-cloud, debian-cloud-6.12)" ;;
	esac
}

# debian_modules MODDIR STAGE: DEBIAN_MODULES and their dependencies, each
# after what it depends on, into STAGE/lib/modules/forksafe/.
debian_modules() {
	local dir=$1 stage=$2 m p
	local -A seen=()
	mkdir -p "$stage/lib/modules/forksafe"
	: >"$stage/lib/modules/forksafe.load"
	for m in $DEBIAN_MODULES; do
		! grep -qE "/$m\.ko\$" "$dir/modules.builtin" || continue
		p=$(grep -oE "^[^:]*/$m\.ko(\.xz)?:" "$dir/modules.dep") ||
			die "$(basename "$dir"): no module $m, built in or not"
		debian_module "$dir" "$stage" "${p%:}"
	done
}

debian_module() {
	local dir=$1 stage=$2 p=$3 d f
	local -a deps
	[ -z "${seen[$p]:-}" ] || return 0
	seen[$p]=1
	read -r -a deps < <(awk -v p="$p:" '$1 == p { $1 = ""; print }' "$dir/modules.dep")
	for d in "${deps[@]}"; do
		debian_module "$dir" "$stage" "$d"
	done
	f=$(basename "${p%.xz}")
	case "$p" in
	*.xz) xz -dc "$dir/$p" >"$stage/lib/modules/forksafe/$f" ;;
	*) cp "$dir/$p" "$stage/lib/modules/forksafe/$f" ;;
	esac
	echo "/lib/modules/forksafe/$f" >>"$stage/lib/modules/forksafe.load"
}

debian_fetch() {
	local name=$1 meta pkg version dest tmp kver
	meta=$(debian_meta "$name")
	pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')
	[ -n "$pkg" ] || die "$name: apt knows no package $meta (run apt-get update)"
	version=$(apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
	dest=$cache/kernels/$name-$pkg-$version
	mkdir -p "$out" "$cache/kernels"
	if [ -f "$dest/bzImage" ]; then
		log "$name: cached ($dest)"
	else
		log "$name: downloading $pkg $version"
		tmp=$(mktemp -d "$cache/kernels/.debian.XXXXXX")
		# shellcheck disable=SC2064 # expand now: tmp is local
		trap "rm -rf '$tmp'" EXIT
		(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$version" >download.log 2>&1) ||
			die "$name: apt-get download $pkg=$version failed: $(tail -n 1 "$tmp/download.log")"
		dpkg-deb -x "$tmp/"*.deb "$tmp/root"
		kver=$(ls "$tmp/root/lib/modules")
		depmod -b "$tmp/root" "$kver"
		mkdir "$tmp/out"
		cp "$tmp/root/boot/vmlinuz-$kver" "$tmp/out/bzImage"
		cp "$tmp/root/boot/config-$kver" "$tmp/out/.config"
		debian_modules "$tmp/root/lib/modules/$kver" "$tmp/stage"
		(cd "$tmp/stage" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
			cpio --null -o -H newc --owner=0:0 --reproducible --quiet) >"$tmp/out/modules.cpio"
		echo "$pkg $version" >"$tmp/out/package"
		rm -rf "$dest"
		mv "$tmp/out" "$dest"
		log "$name: $(grep -c . "$tmp/stage/lib/modules/forksafe.load") module(s) for the guests"
		rm -rf "$tmp"
		trap - EXIT
	fi
	ln -sfn "$dest/bzImage" "$out/bzImage-$name"
	ln -sfn "$dest/.config" "$out/config-$name"
}

# build NAME: NAME is a variant, with -6.12 at its end for 6.12.
# variant NAME: for a build or a package of NAME, v (the variant without
# its version), the version's paths (use_version), key (the inputs' hash)
# and dest (its place in the cache).
variant() {
	v=$1
	case "$v" in *-6.12) v=${v%-6.12}; use_version 6.12 ;; *) use_version 6.1 ;; esac
	key=$(input_hash "$v")
	[ "$ver" = 6.1 ] || key=$ver-$key
	dest=$cache/kernels/$v-$key
}

build() {
	local name=$1 v=$1 key dest dir
	case "$name" in debian*) debian_fetch "$name"; return ;; esac
	variant "$name"
	case "$v" in patched | stock | kunit | debug | patched-bench | stock-bench | mutant-*) ;;
	*) die "unknown variant '$name' (patched, stock, kunit, debug, patched-bench, stock-bench, mutant-NAME; -6.12 at the end for 6.12)" ;;
	esac
	mkdir -p "$out"
	if [ -f "$dest/bzImage" ]; then
		log "$v: cached ($dest)"
	else
		dir=$(build_dir "$v")
		log "$v: building in $dir (inputs $key)"
		log "$v: applying the patches"
		prepare_tree "$v" "$dir"
		log "$v: configuring (tinyconfig and the fragments)"
		configure "$v" "$dir"
		if ! with_progress "$v: compiling" "$dir/build.log" \
			make -C "$dir" -j"$jobs" ARCH=x86_64 bzImage; then
			tail -n 20 "$dir/build.log" >&2
			die "$v: build failed, log in $dir/build.log"
		fi
		full_build_steps "$dir/build.log"
		compiled_against "$dir" "$v"
		mkdir -p "$dest.tmp"
		cp "$dir/arch/x86/boot/bzImage" "$dir/.config" "$dest.tmp/"
		git -C "$dir" log --oneline forksafe-base..HEAD >"$dest.tmp/patches"
		rm -rf "$dest"
		mv "$dest.tmp" "$dest"
	fi
	ln -sfn "$dest/bzImage" "$out/bzImage-$name"
	ln -sfn "$dest/.config" "$out/config-$name"
}

# ---- a Debian package of a build ---------------------------------------------
# What an operator installs: the kernel's own bindeb-pkg, run in the
# variant's tree (made ready as build does, then built incrementally: the
# same objects as its bzImage), with this build's configuration in
# /boot/config-*.  Its version names the inputs' hash, so apt sees every
# change of the series as an upgrade of one package.
deb() {
	local name=$1 v=$1 key dest dir pkg_version
	variant "$name"
	case "$v" in patched | stock) ;; *) die "deb: '$name' is not a kernel operators install (patched or stock, -6.12 at the end for 6.12)" ;; esac
	local tool deb_file
	for tool in dpkg-buildpackage fakeroot rsync dh_testdir; do
		command -v "$tool" >/dev/null ||
			die "deb: bindeb-pkg needs $tool (dpkg-dev, fakeroot, rsync, debhelper): run 'make kernel-deb'"
	done
	mkdir -p "$out/debs"
	if [ -z "$(find "$dest" -maxdepth 1 -name 'linux-image-*.deb' 2>/dev/null)" ]; then
		dir=$(build_dir "$v")
		log "$v: packaging in $dir (inputs $key)"
		prepare_tree "$v" "$dir"
		configure "$v" "$dir"
		pkg_version="1+forksafe.${key##*-}"
		rm -f "$dir"/../linux-image-*_"$pkg_version"_*.deb "$dir"/../linux-libc-dev_"$pkg_version"_*.deb
		if ! with_progress "$v: bindeb-pkg" "$dir/deb.log" \
			make -C "$dir" -j"$jobs" ARCH=x86_64 KDEB_PKGVERSION="$pkg_version" \
			KBUILD_BUILD_USER=forksafe KBUILD_BUILD_HOST=forksafe DEBEMAIL=forksafe@example.org \
			DEBFULLNAME=forksafe bindeb-pkg; then
			tail -n 20 "$dir/deb.log" >&2
			die "$v: bindeb-pkg failed, log in $dir/deb.log"
		fi
		mkdir -p "$dest"
		cp "$dir"/../linux-image-*_"$pkg_version"_amd64.deb "$dest/"
		rm -f "$dir"/../*_"$pkg_version"_*.deb "$dir"/../*_"$pkg_version"_*.buildinfo "$dir"/../*_"$pkg_version"_*.changes
	fi
	deb_file=$(find "$dest" -maxdepth 1 -name 'linux-image-*.deb' | head -n 1)
	ln -sfn "$deb_file" "$out/debs/linux-image-$name.deb"
	log "$v: $(basename "$(readlink "$out/debs/linux-image-$name.deb")") (build/debs/linux-image-$name.deb)"
}

# ---- developer workflow ------------------------------------------------------
tree() {
	if [ -e "$devtree/.git" ]; then
		log "$devtree exists; edit and commit there, then 'make refresh-patches' (remove it to start over)"
		return 0
	fi
	prepare_tree patched "$devtree"
	git -C "$devtree" checkout -q -b forksafe
	log "series applied in $devtree on branch forksafe; commit there, then 'make refresh-patches'"
}

refresh() {
	[ -e "$devtree/.git" ] || die "no tree at $devtree: run 'make kernel-tree' first"
	git -C "$devtree" diff --quiet HEAD || die "$devtree has uncommitted changes"
	mkdir -p "$pdir"
	rm -f "$pdir"/*.patch
	git -C "$devtree" format-patch -q --no-signature --zero-commit -o "$pdir" forksafe-base..HEAD
	find "$pdir" -maxdepth 1 -name '*.patch' -printf '%f\n' | sort >"$pdir/series"
	log "$ver series: $(wc -l <"$pdir/series") patch(es)"
}

# One line per patch, "ok NAME" or "not ok NAME", the findings on stderr.
# checkpatch's SPDX check runs python3 with ply and git: Debian's, not any
# other python3 first on PATH.
checkpatch() {
	local p rc=0
	ensure_base
	while read -r p; do
		if (cd "$base" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict -q "$p" >&2); then
			echo "ok ${p##*/}"
		else
			echo "not ok ${p##*/}"
			rc=1
		fi
	done < <(patches patched)
	return "$rc"
}

case "${1:-}" in
build) build "${2:-}" ;;
deb) deb "${2:-}" ;;
tree | refresh | checkpatch) use_version "${2:-6.1}"; "$1" ;;
*) die "usage: kernel.sh build VARIANT[-6.12] | deb patched|stock[-6.12] | tree [6.12] | refresh [6.12] | checkpatch [6.12]" ;;
esac
