#!/bin/bash
# Print the accelerator guests will use (kvm or tcg), probing KVM with a
# throwaway guest of KERNEL.  Why KVM was refused goes to stderr.
#   accel-probe.sh KERNEL
set -euo pipefail
# shellcheck source=qemu.sh
. "$(dirname "$0")/qemu.sh"
[ $# -eq 1 ] || die "usage: accel-probe.sh KERNEL"
[ -f "$1" ] || die "accel-probe: kernel $1 not found"
qemu_setup
qemu_accel "$1"
