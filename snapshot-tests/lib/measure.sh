# shellcheck shell=bash
# Everything a measurement needs, for the child shell that runs one row
# (rows.sh) and for drivers that measure outside rows.  Sourced; defines
# functions only.
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=../../qemu-scripts/qemu.sh
. "$here/../../qemu-scripts/qemu.sh"
# shellcheck source=../../qemu-scripts/snapshot.sh
. "$FORKSAFE_ROOT/qemu-scripts/snapshot.sh"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
# shellcheck source=rows.sh
. "$here/rows.sh"
# shellcheck source=rng_fork.sh
. "$here/rng_fork.sh"
# shellcheck source=wg_fork.sh
. "$here/wg_fork.sh"
# shellcheck source=wg_scale.sh
. "$here/wg_scale.sh"
# shellcheck source=tcp_fork.sh
. "$here/tcp_fork.sh"
# shellcheck source=signal.sh
. "$here/signal.sh"
# shellcheck source=seed.sh
. "$here/seed.sh"
# shellcheck source=cold.sh
. "$here/cold.sh"
unset here
