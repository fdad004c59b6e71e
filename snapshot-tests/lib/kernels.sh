# shellcheck shell=bash
# The kernels under test.  Sourced after qemu.sh; defines functions only.
#
# KERNEL=/path/bzImage tests that kernel alone, named "custom"; otherwise
# the suite's own builds (kernel-patches/kernel.sh), by variant name.

test_kernels() {
	if [ -n "${KERNEL:-}" ]; then echo custom; else echo patched stock; fi
}

kernel_path() {
	case "$1" in
	custom) echo "$KERNEL" ;;
	*) echo "$BUILD/bzImage-$1" ;;
	esac
}

# require_kernels WHO VARIANT...: each is built, or die naming the make target.
require_kernels() {
	local who=$1 k
	shift
	for k in "$@"; do
		[ -f "$(kernel_path "$k")" ] ||
			die "$who: kernel $(kernel_path "$k") not found (make kernel kernel-stock, or KERNEL=)"
	done
}
