#!/bin/bash
# Bad input ends with one clear line and a non-zero exit, never a hang and
# never a stray QEMU: a QEMU that cannot start, a guest that never answers,
# a dead QMP socket, a truncated migration stream, a truncated or garbled
# recorder dump, one without its header or of another shape than its
# reference, a truncated, empty or foreign pcap capture, an unknown
# snapshot method, bad driver options (cold-clones' rows, a WireGuard row
# of one clone too), a driver
# started on the results directory of one that runs, a failing
# row inside the matrix, a guest without vmgenid, an agent request it
# refuses (the reason on stderr), a seed disk that holds
# no filesystem, an operator's image that cannot be used.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernel=$(kernel_path "$(test_kernels | cut -d' ' -f1)")

# expect_fail (lib/ktap.sh) runs in this shell, so any QEMU it starts is
# tracked; every step it takes has its own timeout.
expect_fail "QEMU that cannot start" "failed to start" \
	guest_start bad "$kernel" --extra -no-such-option
expect_fail "QMP socket that does not exist" "No such file" \
	"$QMP_TOOL" -t 2 "$RUN_DIR/nothing.sock" query-status
guest_start paused "$kernel" --extra -S
expect_fail "guest that never answers" "no answer" guest_call paused -t 3 ping
guest_quit paused

# A truncated migration stream: the clone must not load, and say so.
guest_boot orig "$kernel"
mkdir -p "$RUN_DIR/snap"
snap_save migrate-file orig "$RUN_DIR/snap"
truncate -s 1M "$RUN_DIR/snap/vmstate.mig"
expect_fail "truncated migration stream" "error while loading state" \
	snap_restore migrate-file orig "$RUN_DIR/snap" clone "$kernel" 1 auto

# Recorder dumps from a guest are untrusted input; each opens with its header.
printf 'H getrandom-16 16\nR 0 0 00000000000000ff 10 0\nR 0 1 0000000000000001 20 0\n' >"$RUN_DIR/ok.dump"
printf 'H getrandom-16 16\nR 0 0 00000000000000ff 10 0\nR 0 2 0000000000000001 20 0\n' >"$RUN_DIR/gap.dump"
printf 'H getrandom-16 16\nR 0 0 00000000000000ff 10 0\nR 0 1 00000000' >"$RUN_DIR/cut.dump"
printf 'H getrandom-16 16\nR 0 0 zz 10 0\n' >"$RUN_DIR/garbled.dump"
printf 'R 0 0 00000000000000ff 10 0\nR 0 1 0000000000000001 20 0\n' >"$RUN_DIR/headless.dump"
printf 'H urandom-1MiB 4096\nR 0 0 00000000000000ff 10 0\nR 0 1 0000000000000001 20 0\n' >"$RUN_DIR/pages.dump"
expect_fail "dump with a lost line" "gap.dump:3: stream 0: record 2 where 1 was due" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/gap.dump"
expect_fail "truncated dump" "cut.dump:3: truncated" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/cut.dump"
expect_fail "garbled dump" "garbled.dump:2: garbled record" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/garbled.dump"
expect_fail "dump without its header" "headless.dump:1: no header line (H SHAPE UNIT)" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/headless.dump"
expect_fail "dumps of two shapes" \
	"ref is getrandom-16 with 16-byte records, control is urandom-1MiB with 4096-byte records" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/pages.dump"
expect_fail "identical reference and control" "never differ in time" \
	"$BUILD/rng-exposure" ref="$RUN_DIR/ok.dump" control="$RUN_DIR/ok.dump"

# Captures of a guest's wire are untrusted input too (pcap-synth writes them).
synth() { "$BUILD/pcap-synth" >"$RUN_DIR/$1"; }
synth empty.pcap </dev/null
synth cut.pcap <<<$'udp 0 51820 51821 zeros 20\ncut 10\nudp 100 51820 51821 zeros 20'
synth raw.pcap <<<'linktype 101'
printf 'not a capture\n' >"$RUN_DIR/text.pcap"
wgd() { wg_detect "$RUN_DIR/bad.json" none "$@"; }
expect_fail "capture with no frames" "empty.pcap: no frames at all" wgd "$RUN_DIR/empty.pcap"
expect_fail "truncated capture" "cut.pcap: truncated capture (record 2)" wgd "$RUN_DIR/cut.pcap"
expect_fail "capture of another link type" "raw.pcap: link type 12 (RAW), not Ethernet" wgd "$RUN_DIR/raw.pcap"
expect_fail "file that is no capture" "text.pcap: not a pcap capture" wgd "$RUN_DIR/text.pcap"
expect_fail "wg-detect with a bad option" "unknown option -q" wgd -q "$RUN_DIR/text.pcap"
expect_fail "a capture description with a typo" "stdin>:1: unknown statement 'udpp'" \
	synth typo.pcap <<<'udpp 0 1 2 zeros 1'

# The drivers' options, and what happens to a row that fails.
matrix=$FORKSAFE_ROOT/snapshot-tests/drivers/fork-matrix.sh
expect_fail "unknown snapshot method" "unknown method 'vmotion'" "$matrix" --methods vmotion
expect_fail "unknown driver option" "fork-matrix: unknown option '--clone'" "$matrix" --clone 3
expect_fail "driver option without its value" "fork-matrix: --out needs a value" "$matrix" --out
expect_fail "a count that is not one" "fork-matrix: --clones wants whole numbers" "$matrix" --clones 0
expect_fail "a shape's vCPUs that are not a count" "fork-matrix: --shapes' @VCPUS wants whole numbers" \
	"$matrix" --shapes "uuid@2 exec@none"
expect_fail "a shape's crng state that does not exist" "fork-matrix: unknown crng state 'late' in 'exec/late'" \
	"$matrix" --shapes "exec/late"
cold=$FORKSAFE_ROOT/snapshot-tests/drivers/cold-clones.sh
expect_fail "a cold-clone row of four factors" "cold-clones: a row is CLOCK,GENID,SEED,CPU,RNG, not 'det,absent,none,qemu64'" \
	"$cold" --rows "det,absent,none,qemu64"
expect_fail "cold clones of one boot" "cold-clones: --clones wants at least 2" "$cold" --clones 1
expect_fail "a cold-clone factor that does not exist" "cold: unknown seed 'dd' (none, credit, write, write-other)" \
	"$cold" --rows "det,absent,dd,qemu64,no"
storm=$FORKSAFE_ROOT/snapshot-tests/drivers/storm.sh
expect_fail "a storm by a method that cannot chain" \
	"storm: --method chains migrate-file, qcow2-newproc or libvirt-save, not 'loadvm-inproc'" \
	"$storm" --method loadvm-inproc
expect_fail "a WireGuard storm through libvirt" "storm: --wg needs a method that restores into a QEMU of ours" \
	"$storm" --wg --method libvirt-save
expect_fail "a storm of no levels" "storm: --depth wants whole numbers of at least 1, not '0'" "$storm" --depth 0
expect_fail "a crowd of one" "crowd: --clones wants at least 2" \
	"$FORKSAFE_ROOT/snapshot-tests/drivers/crowd.sh" --clones 1
expect_fail "a WireGuard row of one clone" "bench-wg: --clones wants at least 2" \
	"$FORKSAFE_ROOT/snapshot-tests/drivers/bench-wg.sh" --clones 1
expect_fail "more peers than ports set aside" "wg-scale: at most 1000 peers, not 2000" \
	"$FORKSAFE_ROOT/snapshot-tests/drivers/wg-scale.sh" --peers 2000
# A second run of a driver on the results directory of one that runs.
mkdir -p "$RUN_DIR/locked"
exec {held}>"$RUN_DIR/locked/.cold-clones.lock"
flock -n "$held"
expect_fail "a second cold-clones on the results directory of a running one" \
	"cold-clones: another cold-clones run is writing to $RUN_DIR/locked" \
	"$cold" --rows "det,absent,none,qemu64,no" --clones 2 --out "$RUN_DIR/locked"
exec {held}>&-
# A seed disk that is not ext4: init says so and runs no seed tool (its
# seeds would land in the initramfs and vanish), and the guest powers off.
head -c 1M /dev/zero >"$RUN_DIR/blank.img"
seed_boot blank "$kernel" "$RUN_DIR/blank.img" forksafe.seed=load >"$RUN_DIR/blank.log" || true
t_diag "seed disk without a filesystem: $(grep -m1 'seed disk' "$RUN_DIR/blank.log" || echo nothing said)"
t_check "a seed disk without a filesystem: init says so, runs no seed tool, powers off" \
	grep -q 'no seed services: the seed disk did not mount' "$RUN_DIR/blank.log"
rng_row "$(test_kernels | cut -d' ' -f1)" vmotion 1 2 "$RUN_DIR/row-unknown.json" 2>"$RUN_DIR/row.err" || true
verdict=$("$BUILD/fork-report" -f verdicts "$RUN_DIR/row-unknown.json")
t_eq "an unknown method is an error row, with its reason" \
	"$(jq -r '"\(.verdict): \(.why)"' <<<"$verdict")" "error: unknown method 'vmotion' (known: $SNAP_METHODS)"
t_check "the failing row says why on stderr" grep -q "error: unknown method 'vmotion'" "$RUN_DIR/row.err"
# A command that fails without a word inside a measurement still ends the
# row with its place; the child shell's guests are stopped.
silent_failure() { guest_boot row-guest "$1"; false; }
export -f silent_failure
row_run "$RUN_DIR/silent" "$RUN_DIR/row-silent.json" '{"kind":"test"}' silent_failure "$kernel" 2>/dev/null || true
t_diag "silent failure: $(jq -r .error "$RUN_DIR/row-silent.json")"
t_check "a silent failure in a row names the failed command" \
	jq -e '.error | test("\"false\" failed \\(status 1\\)")' "$RUN_DIR/row-silent.json"

guest_boot novmgenid "$kernel" --no-vmgenid
info=$(guest_call novmgenid info)
# shellcheck disable=SC2016 # expanded by the child shell
expect_fail "guest without vmgenid refused by the measurement" "no vmgenid device" \
	bash -c '. "$1"; rng_require "$2"' _ "$FORKSAFE_ROOT/snapshot-tests/lib/measure.sh" "$info"
# A request the agent refuses: its reason reaches stderr, which callers
# keep, not only stdout with the rest of the reply, which many discard.
expect_fail "a refused agent request says why on stderr" "unknown shape 'no-such-shape'" \
	guest_call novmgenid record start no-such-shape 1
guest_stop novmgenid

# An operator's image (IMAGE=, qemu-scripts/image.sh) is read without
# booting it; one that cannot be used says in one line what it lacks.
# Small ext4 images, each one thing short; imports cached in the run.
image_fs() {
	local tree=$RUN_DIR/tree-$1
	shift
	rm -rf "$tree"
	mkdir -p "$tree/etc/systemd/system/multi-user.target.wants" "$tree/boot" "$tree/usr/sbin" "$tree/lib/systemd/system"
	echo 'LABEL=root / ext4 rw 0 1' >"$tree/etc/fstab"
	echo kernel >"$tree/boot/vmlinuz-9.9.9"
	echo initramfs >"$tree/boot/initrd.img-9.9.9"
	for part in "$@"; do
		case "$part" in
		agent) cp "$BUILD/forksafe-agent" "$tree/usr/sbin/" ;;
		unit)
			cp "$FORKSAFE_ROOT/guest/deb/forksafe-agent.service" "$tree/lib/systemd/system/"
			ln -s /lib/systemd/system/forksafe-agent.service "$tree/etc/systemd/system/multi-user.target.wants/"
			;;
		*) echo "$part" >>"$tree/boot/config-9.9.9" ;;
		esac
	done
	mke2fs -q -t ext4 -d "$tree" "$tree.raw" 16M >/dev/null
	echo "$tree.raw"
}
import() { FORKSAFE_CACHE=$RUN_DIR/cache image_import "$@"; }
qemu-img create -q -f vmdk "$RUN_DIR/golden.vmdk" 1M
truncate -s 8M "$RUN_DIR/blank.raw"
expect_fail "an image that is not there" "image: cannot read" import "$RUN_DIR/nothing.qcow2"
expect_fail "an image in a format other than qcow2 or raw" "is vmdk, not qcow2 or raw" import "$RUN_DIR/golden.vmdk"
expect_fail "an image without an ext4 root" "no ext4 root filesystem" import "$RUN_DIR/blank.raw"
expect_fail "an image without the agent" "no forksafe agent: install build/forksafe-agent.deb" \
	import "$(image_fs no-agent CONFIG_VIRTIO_CONSOLE=y CONFIG_VIRTIO_BLK=y)"
expect_fail "an image whose agent's service is not enabled" "its service is not enabled" \
	import "$(image_fs no-unit agent CONFIG_VIRTIO_CONSOLE=y CONFIG_VIRTIO_BLK=y)"
expect_fail "an image whose kernel has no virtio-serial" "no virtio-serial (CONFIG_VIRTIO_CONSOLE)" \
	import "$(image_fs no-console agent unit CONFIG_VIRTIO_BLK=y CONFIG_VMGENID=y)"
# The positive control: the same checks let a usable image through, and a
# kernel without the vmgenid driver is a finding, not a refusal.
usable=$(image_fs no-vmgenid agent unit CONFIG_VIRTIO_CONSOLE=m CONFIG_VIRTIO_BLK=m)
if dir=$(import "$usable" 2>"$RUN_DIR/usable.err"); then
	t_eq "an image without the vmgenid driver is read, and said to have none" \
		"$(cat "$dir/root") $(grep vmgenid_driver "$dir/report") $(grep -c 'never learns of a fork' "$RUN_DIR/usable.err")" \
		"LABEL=root vmgenid_driver=none 1"
else
	t_fail "an image without the vmgenid driver is read: $(tail -n 1 "$RUN_DIR/usable.err")"
fi

left=""
for name in bad paused clone; do if guest_running "$name"; then left+=" $name"; fi; done
left+=$(pgrep -f "$RUN_DIR/row-guest/" || true)
t_eq "no QEMU left running after the failures" "$left" ""
t_done
