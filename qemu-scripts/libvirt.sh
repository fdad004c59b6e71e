# shellcheck shell=bash
# Guests under libvirt.  Sourced after qemu.sh.
#
# The suite runs its own virtlogd and libvirtd (there is no systemd here),
# as root on qemu:///system, and stops them, with every domain it defined,
# when the shell that started them exits.  With LIBVIRT_URI set it starts
# none and uses the libvirtd there instead: an operator's, as long as the
# paths of the domain (the kernel, the initramfs, the disks, the console
# file and the agent's socket, all under the run's directory) mean the same
# to it, as on this host through another socket.  The domain XML below is
# libvirt's rendering of the machine described in machine.sh, as
# machine_qemu_args is QEMU's.

VIRSH=(virsh -q -c qemu:///system)
LIBVIRT_CONF=/etc/libvirt/qemu.conf
declare -A LIBVIRT_PID=()
LIBVIRT_DOMAINS=()

# Guests as root, no security driver, no cgroups; the QEMU driver still
# wants a libvirt-qemu user and group to exist (make deps creates them).
libvirt_configure() {
	grep -q '^# forksafe:' "$LIBVIRT_CONF" 2>/dev/null && return 0
	cat >>"$LIBVIRT_CONF" <<-'EOF'
		# forksafe: the suite runs its own libvirtd; guests run as root
		# without a security driver or cgroups (no systemd here).
		user = "root"
		group = "root"
		security_driver = "none"
		cgroup_controllers = [ ]
		# end forksafe
	EOF
}

LIBVIRTD_TIMEOUT=30 # start of libvirtd to its first answer

libvirt_start() {
	local d pid
	[ -z "${LIBVIRT_PID[libvirtd]:-}" ] || return 0
	if [ -n "${LIBVIRT_URI:-}" ]; then
		libvirt_connect
		return
	fi
	command -v libvirtd >/dev/null || die "libvirt: libvirtd not found: run 'make deps'"
	getent passwd libvirt-qemu >/dev/null || die "libvirt: no libvirt-qemu user: run 'make deps'"
	for d in libvirtd virtlogd; do
		pid=$(pgrep -x "$d" | head -n 1 || true)
		[ -z "$pid" ] || die "libvirt: a $d not started by the suite is running (pid $pid); stop it first"
	done
	libvirt_configure
	mkdir -p "$RUN_DIR/libvirt"
	virtlogd >"$RUN_DIR/libvirt/virtlogd.log" 2>&1 &
	LIBVIRT_PID[virtlogd]=$!
	libvirtd >"$RUN_DIR/libvirt/libvirtd.log" 2>&1 &
	LIBVIRT_PID[libvirtd]=$!
	if ! wait_until "$LIBVIRTD_TIMEOUT" libvirt_settled || not_running "${LIBVIRT_PID[libvirtd]}"; then
		die "libvirt: libvirtd did not come up: $(tail -n 1 "$RUN_DIR/libvirt/libvirtd.log")"
	fi
	libvirt_forget_stale
}

# libvirt_connect: LIBVIRT_URI answers, or one line says why not (a bad
# URI, a refused connection, no permission: virsh's own first line).
LIBVIRT_CONNECTED=0
libvirt_connect() {
	local err=$RUN_DIR/virsh-connect.err
	[ "$LIBVIRT_CONNECTED" = 0 ] || return 0
	VIRSH=(virsh -q -c "$LIBVIRT_URI")
	if ! timeout "$LIBVIRTD_TIMEOUT" "${VIRSH[@]}" version >/dev/null 2>"$err"; then
		die "libvirt: cannot use LIBVIRT_URI=$LIBVIRT_URI: $(sed -n 's/^error: //p' "$err" | grep -m1 -v '^failed to connect to the hypervisor$' ||
			echo "no answer in ${LIBVIRTD_TIMEOUT}s")"
	fi
	LIBVIRT_CONNECTED=1
	libvirt_forget_stale
}

# A run whose libvirtd died could not undefine its domains, and the next
# define of the name would fail: every forksafe-* domain left over goes.
libvirt_forget_stale() {
	local dom
	for dom in $("${VIRSH[@]}" list --all --name | grep '^forksafe-' || true); do
		echo "libvirt: removing $dom, left defined by an earlier run" >&2
		"${VIRSH[@]}" destroy "$dom" >/dev/null 2>&1 || true
		"${VIRSH[@]}" undefine "$dom" --snapshots-metadata >/dev/null 2>&1 || true
	done
}

# libvirtd answers, or has died.
libvirt_settled() {
	not_running "${LIBVIRT_PID[libvirtd]}" || "${VIRSH[@]}" version >/dev/null 2>&1
}

# virsh_do ARGS...: virsh on the suite's libvirtd.  When it fails, one
# line: that libvirtd has died, if it has (virsh alone would say only that
# a socket refused), else virsh's own first line.
virsh_do() {
	local err=$RUN_DIR/virsh.$BASHPID.err rc=0
	"${VIRSH[@]}" "$@" 2>"$err" || rc=$?
	if [ "$rc" != 0 ]; then
		if [ -n "${LIBVIRT_PID[libvirtd]:-}" ] && not_running "${LIBVIRT_PID[libvirtd]}"; then
			echo "libvirt: libvirtd died; 'virsh $1' failed" >&2
		else
			echo "libvirt: virsh $1: $(grep -m1 . "$err" || echo "failed with status $rc")" >&2
		fi
	fi
	rm -f "$err"
	return "$rc"
}

libvirt_cleanup() {
	local dom d pid
	for dom in "${LIBVIRT_DOMAINS[@]}"; do
		"${VIRSH[@]}" destroy "$dom" >/dev/null 2>&1 || true
		"${VIRSH[@]}" undefine "$dom" --snapshots-metadata >/dev/null 2>&1 || true
		# A libvirtd that died leaves its domain's QEMU running.  It is ours
		# by name: a run starts only when no other libvirtd runs.
		for pid in $(pgrep -f -- "-name guest=$dom," || true); do stop_pid "$pid"; done
	done
	LIBVIRT_DOMAINS=()
	for d in libvirtd virtlogd; do
		[ -z "${LIBVIRT_PID[$d]:-}" ] || stop_pid "${LIBVIRT_PID[$d]}"
	done
	LIBVIRT_PID=()
}
CLEANUP_HOOKS+=(libvirt_cleanup)

# libvirt_domain_xml: libvirt's rendering of the machine described last
# (machine.sh), with <genid/> for the vmgenid device.  A part of the
# description that libvirt cannot express here is an error, not dropped.
libvirt_domain_xml() {
	local dir type=qemu genid="" disk="" cpu="" rng=""
	dir=$(guest_dir "${MACHINE[name]}")
	[ "${MACHINE[accel]}" = kvm ] && type=kvm
	if [ -n "${MACHINE[net]}${MACHINE[pcap]}" ] || [ -n "${MACHINE[icount]}" ] ||
		[ "${#QEMU_PROCESS[@]}" -gt 0 ]; then
		echo "libvirt: the domain XML has no network, capture, instruction counting or QEMU process options" >&2
		return 1
	fi
	case "${MACHINE[guid]}" in
	none) ;;
	auto) genid="<genid/>" ;;
	*) genid="<genid>${MACHINE[guid]}</genid>" ;;
	esac
	[ -z "${MACHINE[cpu]}" ] || cpu="<cpu mode='custom' match='exact'><model>${MACHINE[cpu]}</model></cpu>"
	# An image's root disk first (the guest finds it by its root= spec).
	if [ -n "${MACHINE[root]}" ]; then
		disk="<disk type='file' device='disk'><driver name='qemu' type='qcow2' cache='unsafe'/>"
		disk+="<source file='${MACHINE[root]}'/><target dev='vdc' bus='virtio'/></disk>"
	fi
	if [ -n "${MACHINE[disk]}" ]; then
		disk+="<disk type='file' device='disk'><driver name='qemu' type='qcow2' cache='unsafe'/>"
		disk+="<source file='${MACHINE[disk]}'/><target dev='vda' bus='virtio'/></disk>"
	fi
	if [ -n "${MACHINE[seed_disk]}" ]; then
		disk+="<disk type='file' device='disk'><driver name='qemu' type='raw' cache='writeback'/>"
		disk+="<source file='${MACHINE[seed_disk]}'/><target dev='vdb' bus='virtio'/>"
		disk+="<serial>$SEED_DISK_SERIAL</serial></disk>"
	fi
	[ "${MACHINE[rng]}" = 0 ] || rng="<rng model='virtio'><backend model='builtin'/></rng>"
	cat <<-EOF
		<domain type='$type'>
		  <name>$(libvirt_dom "${MACHINE[name]}")</name>
		  <memory unit='MiB'>${MACHINE[mem]}</memory>
		  <vcpu>${MACHINE[smp]}</vcpu>
		  $cpu
		  $genid
		  <os>
		    <type arch='x86_64' machine='q35'>hvm</type>
		    <kernel>${MACHINE[kernel]}</kernel>
		    <initrd>${MACHINE[initrd]}</initrd>
		    <cmdline>${MACHINE[cmdline]}</cmdline>
		  </os>
		  <features><acpi/></features>
		  <on_poweroff>destroy</on_poweroff>
		  <on_reboot>destroy</on_reboot>
		  <on_crash>destroy</on_crash>
		  <devices>
		    <emulator>$(command -v "$QEMU")</emulator>
		    $disk
		    $rng
		    <serial type='file'><source path='$dir/console.log' append='on'/><target port='0'/></serial>
		    <channel type='unix'>
		      <source mode='bind' path='$dir/agent.sock'/>
		      <target type='virtio' name='$AGENT_PORT'/>
		    </channel>
		    <controller type='usb' model='none'/>
		    <memballoon model='none'/>
		  </devices>
		</domain>
	EOF
}

# libvirt_pin_guid IN.xml OUT.xml GUID: libvirt draws a new GUID on every
# revert and restore, even for a <genid> with a value, so the negative
# control pins the vmgenid device's property with <qemu:override> in the
# first <domain> of IN (a domain or a snapshot's XML).
libvirt_pin_guid() {
	awk -v guid="$3" '
		!ns && /<domain / { sub(/<domain /, "<domain xmlns:qemu=\"http://libvirt.org/schemas/domain/qemu/1.0\" "); ns = 1 }
		!done && /<\/domain>/ {
			print "<qemu:override><qemu:device alias=\"vmgenid0\"><qemu:frontend>"
			print "<qemu:property name=\"guid\" type=\"string\" value=\"" guid "\"/>"
			print "</qemu:frontend></qemu:device></qemu:override>"
			done = 1
		}
		{ print }
		END { if (!done) exit 1 }' "$1" >"$2" || { echo "libvirt: no </domain> in $1" >&2; return 1; }
}

libvirt_dom() { echo "forksafe-$1"; }

# libvirt_boot NAME KERNEL [options of machine]: define and start, wait
# for the agent.
libvirt_boot() {
	local name=$1 dir
	libvirt_start || return 1
	dir=$(guest_dir "$name")
	mkdir -p "$dir"
	machine "$@" || return 1
	libvirt_domain_xml >"$dir/domain.xml" || return 1
	virsh_do define "$dir/domain.xml" >/dev/null || return 1
	LIBVIRT_DOMAINS+=("$(libvirt_dom "$name")")
	virsh_do start "$(libvirt_dom "$name")" >/dev/null || return 1
	guest_wait_agent "$name"
}
