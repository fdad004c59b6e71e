# shellcheck shell=bash
# The guest machine, described once.  Sourced by qemu.sh.
#
# `machine NAME KERNEL [options]` describes one guest in MACHINE: its
# devices, kernel command line and accelerator.  Two renderers read that
# description and nothing else: machine_qemu_args (the QEMU command line,
# for guests of our own) and libvirt_domain_xml in libvirt.sh (libvirt's
# domain XML, for guests libvirt starts).  A device or a kernel parameter
# is added here, and both kinds of guest have it.

declare -A MACHINE=()
SEED_DISK_SERIAL=forksafe-seed # guest/init.c looks for it
QEMU_PROCESS=() # options of the QEMU process rather than of the machine

# machine NAME KERNEL [options]
#   --smp N          vCPUs (1)
#   --guid GUID      the vmgenid device's GUID ("auto", the default: QEMU
#                    draws one per process)
#   --no-vmgenid     no vmgenid device at all
#   --role ROLE      what the guest's init runs (agent; probe, shell)
#   --disk FILE      a qcow2 that can hold savevm's VM state (no device uses it)
#   --net SOCK,MAC   virtio-net on a switch_start switch
#   --pcap FILE      that network's traffic, captured by QEMU (QEMU only)
#   --cpu MODEL      the vCPU model (QEMU's default, qemu64 under TCG: no RDRAND)
#   --rng            a virtio-rng device (QEMU's built-in backend)
#   --seed-disk FILE a raw ext4 image as a virtio disk with the serial
#                    forksafe-seed, which the guest's init mounts as the seed
#                    tool's directory when forksafe.seed= is set
#   --deterministic  guest time counts instructions (-icount shift=0,
#                    sleep=off), the RTC starts at a fixed date and runs on
#                    guest time, the vCPU is qemu64, and virtio devices
#                    answer the guest in its own vCPU thread (ioeventfd=off;
#                    with ioeventfd QEMU's main loop answers whenever the
#                    host schedules it, and one boot in two or three parted
#                    from the others within 400 ms): two boots of one kernel
#                    run the same instructions until the host speaks
#   --count-instructions
#                    guest time counts instructions while the vCPU runs and
#                    follows the host's clock while it idles (-icount
#                    shift=0,sleep=on), vCPU qemu64: busy time is
#                    instructions, and a guest that waits on another (a
#                    WireGuard peer) does not age faster than the host,
#                    as it does under --deterministic
#   --record FILE, --replay FILE
#                    deterministic, and QEMU records every input of the run
#                    to FILE, or feeds them back from FILE: a replay runs the
#                    recorded instructions again, with the same interrupts at
#                    the same instructions and the same clock, even where
#                    the host's answers vary (a disk's reads, the agent
#                    talking to the guest), which --deterministic alone
#                    does not hold constant
#   --append "P..."  kernel parameters
#   --kunit          a kernel built with KUnit (CONFIG_KUNIT=y in the .config
#                    beside it) runs its suites at boot; without this it
#                    runs none (kunit.filter_glob that no suite matches):
#                    the series' suites fork the VM thousands of times and
#                    took 41 s of each boot of the debug build (2026-12-07),
#                    and a guest snapshotted before the crng is ready could
#                    not boot past their wait for it
# and, for the QEMU process: --loadvm TAG, --incoming URI, --extra ARG.
# KERNEL may be an image's kernel (image.sh's image_import: beside it the
# image as disk, its initrd.img and its root= spec).  The guest then boots
# the image's own initramfs and init from a root disk of its own,
# $dir/root.qcow2 (a virtio disk): an overlay over the image, which is
# never written, made at the first boot; a clone's is a copy of its
# original's (snapshot.sh), the disk as it was when the RAM was saved.
machine() {
	local name=$1 kernel=$2
	shift 2
	MACHINE=([name]=$name [kernel]=$kernel [initrd]=$INITRAMFS [mem]=$GUEST_MEM [smp]=1
		[guid]=auto [role]=agent [disk]="" [net]="" [pcap]="" [cpu]="" [rng]=0 [seed_disk]="" [deterministic]=0 [icount]="" [append]="" [kunit]=0 [rr]="" [root]="" [root_spec]="")
	QEMU_PROCESS=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--smp) MACHINE[smp]=$2 ;;
		--guid) MACHINE[guid]=$2 ;;
		--no-vmgenid) MACHINE[guid]=none; shift; continue ;;
		--role) MACHINE[role]=$2 ;;
		--disk) MACHINE[disk]=$2 ;;
		--net) MACHINE[net]=$2 ;;
		--pcap) MACHINE[pcap]=$2 ;;
		--cpu) MACHINE[cpu]=$2 ;;
		--rng) MACHINE[rng]=1; shift; continue ;;
		--seed-disk) MACHINE[seed_disk]=$2 ;;
		--deterministic) MACHINE[deterministic]=1 MACHINE[cpu]=qemu64; shift; continue ;;
		--count-instructions) MACHINE[icount]="shift=0,sleep=on" MACHINE[cpu]=qemu64; shift; continue ;;
		--append) MACHINE[append]=$2 ;;
		--kunit) MACHINE[kunit]=1; shift; continue ;;
		--record | --replay) MACHINE[rr]=",rr=${1#--},rrfile=$2" MACHINE[deterministic]=1 MACHINE[cpu]=qemu64 ;;
		--loadvm) QEMU_PROCESS+=(-loadvm "$2") ;;
		--incoming) QEMU_PROCESS+=(-incoming "$2") ;;
		--extra) QEMU_PROCESS+=("$2") ;;
		*) echo "machine: unknown guest option '$1'" >&2; return 1 ;;
		esac
		[ $# -ge 2 ] || { echo "machine: $1 needs a value" >&2; return 1; }
		shift 2
	done
	if [ -n "${MACHINE[pcap]}" ] && [ -z "${MACHINE[net]}" ]; then
		echo "machine: --pcap needs --net" >&2
		return 1
	fi
	# A distribution kernel's modules (kernel-patches/kernel.sh) ride in an
	# archive of their own, appended to the initramfs.
	local modules
	modules=$(dirname "$(readlink -f "$kernel")")/modules.cpio
	if [ -f "$modules" ]; then
		MACHINE[initrd]=$RUN_DIR/initrd-$name.cpio
		cat "$INITRAMFS" "$modules" >"${MACHINE[initrd]}"
	fi
	machine_image || return 1
	MACHINE[accel]=$(qemu_accel "$kernel")
	# Counting instructions is TCG's.
	if [ "${MACHINE[deterministic]}" = 1 ]; then
		MACHINE[icount]="shift=0,sleep=off,align=off${MACHINE[rr]}"
	fi
	if [ -n "${MACHINE[icount]}" ]; then MACHINE[accel]=tcg; fi
	MACHINE[cmdline]="console=ttyS0 panic=-1 forksafe.role=${MACHINE[role]}${MACHINE[append]:+ ${MACHINE[append]}}"
	if [ "${MACHINE[kunit]}" = 0 ] &&
		grep -qx 'CONFIG_KUNIT=y' "$(dirname "$(readlink -f "$kernel")")/.config" 2>/dev/null; then
		MACHINE[cmdline]+=" kunit.filter_glob=no-suite"
	fi
	# The agent's network commands name eth0.
	if [ -n "${MACHINE[root]}" ]; then MACHINE[cmdline]+=" root=${MACHINE[root_spec]} rw net.ifnames=0"; fi
}

# An image's kernel: its initramfs, a root disk, the memory systemd wants.
machine_image() {
	local image root
	# The kernel's own directory: patched@debian-image's vmlinuz is a link.
	image=$(dirname "${MACHINE[kernel]}")
	[ -f "$image/disk.format" ] || return 0
	if [ -n "${MACHINE[seed_disk]}" ]; then
		echo "machine: an image's guest takes no --seed-disk" >&2
		return 1
	fi
	root=$(guest_dir "${MACHINE[name]}")/root.qcow2
	if [ ! -f "$root" ]; then
		qemu-img create -q -f qcow2 -F "$(cat "$image/disk.format")" -b "$(readlink -f "$image/disk")" "$root" ||
			return 1
	fi
	# The suite's own kernels boot the image without an initramfs.
	MACHINE[root]=$root MACHINE[initrd]="" MACHINE[root_spec]=$(cat "$image/root")
	[ ! -f "$image/initrd.img" ] || MACHINE[initrd]=$image/initrd.img
	[ "${MACHINE[mem]}" -ge "$IMAGE_MEM" ] || MACHINE[mem]=$IMAGE_MEM
}

# The QEMU command line of the machine described last, in QEMU_ARGS.
machine_qemu_args() {
	local dir vio=""
	dir=$(guest_dir "${MACHINE[name]}")
	[ "${MACHINE[deterministic]}" = 0 ] || vio=,ioeventfd=off
	QEMU_ARGS=(
		-nodefaults -no-user-config -display none -no-reboot
		-machine q35 -accel "${MACHINE[accel]}" -m "${MACHINE[mem]}" -smp "${MACHINE[smp]}"
		-kernel "${MACHINE[kernel]}" ${MACHINE[initrd]:+-initrd "${MACHINE[initrd]}"} -append "${MACHINE[cmdline]}"
		-serial "file:$dir/console.log"
		-qmp "unix:$dir/qmp.sock,server=on,wait=off"
		-chardev "socket,id=agent,path=$dir/agent.sock,server=on,wait=off"
		-device "virtio-serial-pci,id=vser$vio"
		-device "virtserialport,bus=vser.0,chardev=agent,name=$AGENT_PORT"
	)
	if [ -n "${MACHINE[cpu]}" ]; then
		QEMU_ARGS+=(-cpu "${MACHINE[cpu]}")
	fi
	if [ -n "${MACHINE[icount]}" ]; then
		QEMU_ARGS+=(-icount "${MACHINE[icount]}")
	fi
	if [ "${MACHINE[deterministic]}" = 1 ]; then
		# shellcheck disable=SC2054 # one argument, commas and all
		QEMU_ARGS+=(-rtc base=2020-01-01T00:00:00,clock=vm)
	fi
	if [ "${MACHINE[guid]}" != none ]; then
		QEMU_ARGS+=(-device "vmgenid,id=vmgenid0,guid=${MACHINE[guid]}")
	fi
	if [ -n "${MACHINE[disk]}" ]; then
		QEMU_ARGS+=(-drive "if=none,id=snapdisk,format=qcow2,cache=unsafe,file=${MACHINE[disk]}")
	fi
	if [ -n "${MACHINE[root]}" ]; then
		QEMU_ARGS+=(-drive "if=none,id=root,format=qcow2,cache=unsafe,file=${MACHINE[root]}"
			-device "virtio-blk-pci,drive=root$vio")
	fi
	if [ "${MACHINE[rng]}" = 1 ]; then
		QEMU_ARGS+=(-device "virtio-rng-pci$vio")
	fi
	if [ -n "${MACHINE[seed_disk]}" ]; then
		QEMU_ARGS+=(-drive "if=none,id=seeddisk,format=raw,cache=writeback,file=${MACHINE[seed_disk]}"
			-device "virtio-blk-pci,drive=seeddisk,serial=$SEED_DISK_SERIAL$vio")
	fi
	if [ -n "${MACHINE[net]}" ]; then
		QEMU_ARGS+=(-netdev "vde,id=net0,sock=${MACHINE[net]%,*}"
			-device "virtio-net-pci,netdev=net0,mac=${MACHINE[net]##*,}$vio")
	fi
	if [ -n "${MACHINE[pcap]}" ]; then
		QEMU_ARGS+=(-object "filter-dump,id=dump0,netdev=net0,file=${MACHINE[pcap]}")
	fi
	QEMU_ARGS+=("${QEMU_PROCESS[@]}")
}
