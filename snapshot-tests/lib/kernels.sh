# shellcheck shell=bash
# The kernels under test.  Sourced after qemu.sh; defines functions only.
#
# KERNEL=/path/bzImage tests that kernel alone, named "custom";
# IMAGE=/path/golden.qcow2 an operator's image, named "image", with the
# kernel inside it (qemu-scripts/image.sh), and with the suite's where
# KERNELS says patched@image or stock@image; otherwise
# the suite's own builds (kernel-patches/kernel.sh), by variant name:
# KERNELS="patched stock" unless told otherwise (patched-6.12 stock-6.12
# are the 6.12 builds).  debian-image is the Debian 12 image of make image,
# systemd and all, with its own kernel (Debian's generic 6.1), read as an
# IMAGE= is; patched@debian-image and stock@debian-image boot that image
# with the suite's kernels instead (no initramfs: all they need is built in).

test_kernels() {
	local k
	[ -z "${KERNEL:-}" ] || [ -z "${IMAGE:-}" ] || die "KERNEL= and IMAGE= both set: one or the other"
	if [ -n "${KERNEL:-}" ]; then echo custom; return; fi
	for k in ${KERNELS:-patched stock}; do
		case "$k" in
		patched | stock | patched-6.12 | stock-6.12 | debian | debian-cloud | debian-cloud-6.12 | debian-image) ;;
		debug | debug-6.12) ;;
		patched@debian-image | stock@debian-image | patched@image | stock@image) ;;
		*) die "KERNELS: no kernel named '$k' (patched, stock, patched-6.12, stock-6.12; Debian's own: debian, debian-cloud, debian-cloud-6.12, debian-image; patched@debian-image, stock@debian-image)" ;;
		esac
	done
	# IMAGE=: that image with its own kernel, and with ours where asked.
	if [ -n "${IMAGE:-}" ]; then
		echo "image ${KERNELS:-}" | tr ' ' '\n' | grep -E '^image$|@image$' | tr '\n' ' '
		return
	fi
	echo "${KERNELS:-patched stock}"
}

# kernel_role NAME: what a kernel must show.  "stock" is the yardstick,
# which must show the window somewhere (the positive control); every other
# kernel, a custom KERNEL= included, must show none.
# Debian's own kernels (kernel.sh debian-*) carry no series: stock.
kernel_role() { case "$1" in stock | stock-* | stock@* | debian | debian-*) echo stock ;; *) echo patched ;; esac; }

# fresh_clones NAME N: how many fresh clones a row of NAME takes, N on a
# kernel that must show no window, 1 on the yardstick, where a scenario
# uses it for a window that is certain: one clone shows it.
fresh_clones() { if [ "$(kernel_role "$1")" = stock ]; then echo 1; else echo "$2"; fi; }

# distro_kernel NAME: a distribution's kernel, Debian's or one inside an
# operator's image: faster clocks in the vDSO (longer recordings, older
# guests), and no vmgenid driver is a finding, not a broken build.
distro_kernel() { case "$1" in debian | debian-* | image) ;; *) return 1 ;; esac; }
# image_guest KERNEL_NAME: does it boot an image (systemd as PID 1, the
# image's python3 and libraries), rather than the suite's initramfs?
image_guest() { case "$1" in image | debian-image | *@image | *@debian-image) ;; *) return 1 ;; esac; }

# debug_kernel: the debug lane's build (the series, its KUnit suites,
# lockdep, KASAN and debugobjects), DEBUG_KERNEL= or debug-6.12: make check
# builds one debug kernel, for the 6.12 series, where the vDSO check is;
# DEBUG_KERNEL=debug runs the lane on 6.1 (make kernel-debug).
debug_kernel() {
	case "${DEBUG_KERNEL:-debug-6.12}" in
	debug | debug-6.12) echo "${DEBUG_KERNEL:-debug-6.12}" ;;
	*) die "DEBUG_KERNEL=$DEBUG_KERNEL: no such lane (debug, debug-6.12)" ;;
	esac
}

# The same test for jq: `select(.kernel | $STOCK_JQ)`.
# shellcheck disable=SC2034 # for the drivers
STOCK_JQ='test("^(stock|debian)(-|@|$)")'

kernel_path() {
	case "$1" in
	custom) echo "$KERNEL" ;;
	image | debian-image) echo "$(image_dir "$(image_path "$1")")/vmlinuz" ;;
	*@*) echo "$(image_dir "$(image_path "${1#*@}")")+${1%@*}/vmlinuz" ;;
	*) echo "$BUILD/bzImage-$1" ;;
	esac
}

# image_path NAME: the disk an image kernel's name stands for.
image_path() { if [ "$1" = image ]; then echo "$IMAGE"; else echo "$BUILD/image/disk.qcow2"; fi; }

# require_kernels WHO VARIANT...: each is built, or die naming the make
# target; an image is imported (once), or die saying what it lacks.
require_kernels() {
	local who=$1 k err
	shift
	for k in "$@"; do
		case "$k" in
		image | debian-image)
			err=$(image_import "$(image_path "$k")" 2>&1 >/dev/null) || die "$who: $err"
			[ -z "$err" ] || progress "$who: $err"
			continue
			;;
		*@*)
			require_kernels "$who" "${k%@*}" "${k#*@}"
			image_with_kernel "$(image_dir "$(image_path "${k#*@}")")" "$(kernel_path "${k%@*}")" "${k%@*}" >/dev/null
			continue
			;;
		esac
		[ -f "$(kernel_path "$k")" ] ||
			die "$who: kernel $(kernel_path "$k") not found (make kernel kernel-stock, or KERNEL=)"
	done
}
