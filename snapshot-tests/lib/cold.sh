# shellcheck shell=bash
# Cold clones: separate boots of one image, compared.  Sourced by
# measure.sh; defines functions only.
#
# A cold clone is a machine booted from a copy of a golden image: the same
# kernel and initramfs, its seed file in it (seed.sh), possibly the same
# <genid>.  Each boot
# runs forksafe-cold as its first program (guest/cold.c), which prints the
# RNG's output at four moments and powers off; nothing on the host talks
# to the guest meanwhile, so boots under QEMU's instruction counting
# (--deterministic) differ only where the machine description does.
#
# A row is one setting of the factors below, booted CLONES times:
#   CLOCK  det (machine.sh --deterministic) or tcg (ordinary TCG timing)
#   GENID  absent (no vmgenid device), fixed (every clone the same GUID: a
#          domain copied with its <genid>) or fresh (a GUID per boot)
#   SEED   none, credit (the image's seed credited by forksafe-seed load),
#          write (written to /dev/urandom without credit) or write-other
#          (the same with another image's seed: the kernel command line is
#          write's, so the two rows differ in the seed's bytes alone)
#   CPU    qemu64 (no RDRAND), max (RDRAND, not trusted), max-trusted
#          (random.trust_cpu=on), no-tsc (qemu64 without a cycle counter)
#   RNG    no, or yes (a virtio-rng device)
# Every boot has random.trust_bootloader=off and, unless max-trusted,
# random.trust_cpu=off: only what the row sets can feed the RNG.
#
#   cold_row OUT.json KERNEL_NAME CLONES CLOCK GENID SEED CPU RNG  (parent)
#   cold_measure KERNEL_NAME CLONES CLOCK GENID SEED CPU RNG       (row's child)

COLD_BOOT_TIMEOUT=${COLD_BOOT_TIMEOUT:-300} # one boot to its power-off; the sampler gives up blocking after 120 s of guest time
COLD_FIXED_GUID=6f8e9b52-1c43-4d2a-9e0f-57a1c2b3d4e5
COLD_MOMENTS="first seeded init later"

cold_row() {
	local out=$1 kname=$2 n=$3
	shift 3
	row_run "$RUN_DIR/cold-$kname-$(IFS=-; echo "$*")" "$out" \
		"$(row_keys kind=cold kernel="$kname" clock="$1" genid="$2" seed="$3" cpu="$4" rng="$5")" \
		cold_measure "$kname" "$n" "$@"
}

# cold_opts CLOCK GENID SEED CPU RNG: machine.sh's options, in COLD_OPTS.
cold_opts() {
	local trust=off
	COLD_OPTS=(--role cold)
	case "$1" in
	det) COLD_OPTS+=(--deterministic) ;;
	tcg) ;;
	*) die "cold: unknown clock '$1' (det, tcg)" ;;
	esac
	case "$2" in
	absent) COLD_OPTS+=(--no-vmgenid) ;;
	fixed) COLD_OPTS+=(--guid "$COLD_FIXED_GUID") ;;
	fresh) COLD_OPTS+=(--guid auto) ;;
	*) die "cold: unknown genid '$2' (absent, fixed, fresh)" ;;
	esac
	case "$3" in none | credit | write | write-other) ;; *) die "cold: unknown seed '$3' (none, credit, write, write-other)" ;; esac
	case "$4" in
	qemu64) COLD_OPTS+=(--cpu qemu64) ;;
	max) COLD_OPTS+=(--cpu max) ;;
	max-trusted) COLD_OPTS+=(--cpu max) trust=on ;;
	no-tsc) COLD_OPTS+=(--cpu "qemu64,-tsc") ;;
	*) die "cold: unknown cpu '$4' (qemu64, max, max-trusted, no-tsc)" ;;
	esac
	case "$5" in
	no) ;;
	yes) COLD_OPTS+=(--rng) ;;
	*) die "cold: unknown rng '$5' (no, yes)" ;;
	esac
	COLD_OPTS+=(--append "forksafe.cold=${3%-other} random.trust_cpu=$trust random.trust_bootloader=off")
}

cold_measure() {
	local kname=$1 n=$2 i name
	shift 2
	cold_opts "$@"
	case "$3" in write-other) seed_initramfs "$ROW_DIR/golden.cpio" other ;; *) seed_initramfs "$ROW_DIR/golden.cpio" golden ;; esac
	for i in $(seq 1 "$n"); do
		# Short: the agent's socket path must fit a sockaddr_un.
		name=cold-$(cksum <<<"$ROW_DIR" | cut -d' ' -f1)-$i
		# TCG for both clocks: instruction counting is TCG's, and the
		# ordinary rows measure TCG's timing (KVM's would differ more).
		ACCEL=tcg INITRAMFS=$ROW_DIR/golden.cpio guest_start "$name" "$(kernel_path "$kname")" "${COLD_OPTS[@]}"
		guest_wait_exit "$name" "$COLD_BOOT_TIMEOUT" ||
			die "cold: $name did not power off within ${COLD_BOOT_TIMEOUT}s: $(guest_console_tail "$name")"
		cold_samples "$(guest_dir "$name")/console.log" >"$ROW_DIR/clone$i.json"
		progress "cold $kname $*: clone $i: crng ready at $(jq -r '.crng_init_ms // "-"' "$ROW_DIR/clone$i.json") ms"
	done
	jq -s '{clones: .}' "$ROW_DIR"/clone*.json >"$ROW_DIR/result.json"
}

# cold_samples CONSOLE: one boot's samples as JSON, or die naming what is
# missing.  {MOMENT: {t_ms, ready, entropy, bytes} or {blocked_s}, ...,
# crng_init_ms: the kernel's "crng init done" (null if it never came)}.
cold_samples() {
	local console=$1 json m
	json=$(tr -d '\r' <"$console" | awk '
		function num(s) { return s ~ /^-?[0-9]+$/ ? s : "null" }
		match($0, /forksafe-cold: [a-z]+ t_ms=[0-9]+ ready=[01] entropy=-?[0-9]+ bytes=[0-9a-f]+/) {
			split(substr($0, RSTART + 15, RLENGTH - 15), f, /[ =]/)
			printf "{\"%s\": {\"t_ms\": %s, \"ready\": %s, \"entropy\": %s, \"bytes\": \"%s\"}}\n",
				f[1], num(f[3]), num(f[5]), num(f[7]), f[9]
		}
		match($0, /forksafe-cold: init blocked s=[0-9]+/) {
			printf "{\"init\": {\"blocked_s\": %s}}\n", substr($0, RSTART + 30, RLENGTH - 30)
		}
		match($0, /^\[ *[0-9]+\.[0-9]+\] random: crng init done/) {
			split($0, t, /[][ ]+/)
			printf "{\"crng_init_ms\": %d}\n", t[2] * 1000
		}' | jq -s 'add // {}')
	grep -q 'forksafe-cold: done' "$console" ||
		die "cold: the sampler did not finish: $(grep -m1 'forksafe-cold: .*failed\|Kernel panic' "$console" || tail -n 1 "$console")"
	for m in $COLD_MOMENTS; do
		jq -e --arg m "$m" 'has($m)' <<<"$json" >/dev/null || die "cold: no '$m' sample on the console"
	done
	jq -c '{crng_init_ms: null} + .' <<<"$json"
}
