#!/bin/bash
# make mutants: does every test that guards the series fail when the code it
# guards is taken out?  Each kernel-patches/VERSION/mutants/NAME.patch (its
# first line says what it removes; VERSION is LINUX, 6.1 unless said) is
# applied alone on top of that series, in the KUnit build (kernel.sh build
# mutant-NAME, -6.12 at its end for 6.12), and the checks below run on
# that kernel, in the order below, until one kills it.  A kill is a named
# assertion that failed on a measurement that could tell: a KUnit case
# that ran and failed, an `exposure window` verdict of a row whose control
# held, a WireGuard row `exposed` or `not rekeyed`, a /dev/vmgenid errno,
# wake or count other than the one asserted.  A check that could not tell
# (an error row, a blind control, a boot or guest that failed, a missing or
# skipped case, a timeout) kills nothing: the mutant is reported "not
# killed (error: ...)" and the run fails as it does for a survivor.  A
# fork row that could not tell is measured again first (rng_check).  The
# same checks run first on the unmutated KUnit build, where every one must
# pass: a check that fails there would kill anything and prove nothing.
#
#   mutants.sh [--mutants "NAME..."] [--out DIR]
#
# The checks, those that kill most mutants first (KUnit, then fork_signal,
# which alone sees the mutants of /dev/vmgenid):
#   kunit      snapshot-tests/kunit_vmfork.sh on the kernel: every KUnit
#              case passes, and deterministic boots show the fork's ID
#              reaching the output
#   signal     snapshot-tests/fork_signal.sh on the kernel: /dev/vmgenid's
#              errors, one poll() wake per fork, the checked DRBG fork-safe
#   rebind     snapshot-tests/vmgenid_rebind.sh on the kernel: the driver
#              unbound and bound again, a sleeping poller still woken, no
#              oops at a fork's notification while unbound, the ID's page
#              taken out of user space's mappings and given back
#   rng        a migrate-file fork at 2 vCPUs, getrandom() loops: fork-safe
#   vdso       6.12 only: the same with vDSO getrandom() loops
#   vdso-tail  6.12 only: the same with clones whose GUIDs are new in
#              their last group only (RNG_GUIDS=tail)
#   vdso-nomap 6.12 only: the vDSO row booted with vmgenid.map_id=0 (no
#              page for the vDSO: it must take the system call)
#   long-read  the same with 16 MiB getrandom() calls: fork-safe (at most
#              the page in flight)
#   pre-init   the same with GRND_INSECURE reads, snapshot in CRNG_EARLY:
#              fork-safe
#   wireguard  fork_wireguard's rows, streaming and idle, the stream at
#              1,000 datagrams/s: safe, and the stream reaching the peer
#              again in every clone; streaming with the vmgenid
#              notification held back (masked: only the kernel's own
#              checks see the fork), the same, once every fresh clone's
#              GPE shows the event raised and held; then the sibling
#              row: refused
# Results in DIR/mutants.md (DIR/mutants-6.12.md for 6.12; default results/).
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

out=${RESULTS:-$FORKSAFE_ROOT/results}
mutants=""
opts_parse mutants --mutants=mutants --out=out -- "$@"
qemu_setup
linux=${LINUX:-6.1} suffix=""
case "$linux" in
6.1) ;;
6.12) suffix=-6.12 ;;
*) die "mutants: LINUX=$linux: no such series (6.1, 6.12)" ;;
esac
dir=$FORKSAFE_ROOT/kernel-patches/$linux/mutants
[ -d "$dir" ] || die "mutants: kernel-patches/$linux/mutants/ does not exist"
if [ -z "$mutants" ]; then
	mutants=$(find "$dir" -name '*.patch' -printf '%f\n' | sed 's/\.patch$//' | sort | tr '\n' ' ')
fi
for m in $mutants; do
	[ -f "$dir/$m.patch" ] || die "mutants: no mutant named '$m' in kernel-patches/$linux/mutants/"
done
results_lock mutants "$out"
mkdir -p "$out/mutants"

# check_NAME KERNEL_NAME: 0 when the kernel passes, 1 when it is killed
# (the named assertion on stdout), 2 when the check could not tell (why on
# stdout).
CHECK_TIMEOUT=${CHECK_TIMEOUT:-1800}

# scenario_verdict LOG ERRORS: of a scenario that failed, the first failed
# assertion that is a kill: "not ok" lines whose description matches the
# extended regex ERRORS (assertions about the measurement itself) or whose
# "got" is missing or skip are no kill.  1 and the assertion, or 2 and why.
scenario_verdict() {
	local kill
	kill=$(awk -v errors="$2" '
		/^not ok [0-9]+ / { flush(); desc = $0; sub(/^not ok [0-9]+ /, "", desc); pending = 1; next }
		pending && /^# got / { got = $0; sub(/^# got /, "", got); sub(/, want .*/, "", got); next }
		{ flush() }
		function flush() {
			if (!pending) return
			pending = 0
			if (!found && desc !~ errors && got !~ /^.(missing|skip|).$/ && desc !~ /# SKIP/)
				found = desc (got != "" ? " (got " got ")" : "")
			got = ""
		}
		END { flush(); print found }' "$1")
	if [ -n "$kill" ]; then
		echo "$kill"
		return 1
	fi
	echo "error: $(grep -m1 '^not ok' "$1" | sed 's/^not ok [0-9]* //;s/$/; /' || true)$(tail -n 1 "$1")"
	return 2
}

check_kunit() {
	local log=$RUN_DIR/kunit-$1.log
	KERNEL=$(kernel_path "$1") timeout "$CHECK_TIMEOUT" bash "$FORKSAFE_ROOT/snapshot-tests/kunit_vmfork.sh" \
		>"$log" 2>&1 && return 0
	# A suite's summary line follows its cases; the deterministic boots
	# must have printed and agreed before a differing ID kills.
	grep -q '^not ok.*the recorded and replayed boots print\|^not ok.*the replay with the same ID' "$log" &&
		{ echo "error: the deterministic boots could not compare"; return 2; }
	# A race case whose CPUs never raced ("0 beside a fork": the host ran
	# the vCPUs one after the other) could not tell; it kills nothing
	# (2026-12-06: no-send-check, under a kernel build beside the run,
	# 256 outputs and 0 beside a fork in vmfork_test_race_batch).
	local blind
	blind=$(sed -n 's/.*# \(vmfork_test_race_[a-z]*\): [0-9]* outputs made, 0 beside a fork.*/\1/p' "$log" |
		sort -u | paste -sd'|')
	scenario_verdict "$log" "passed\$|^the recorded|^the replay with${blind:+|($blind)\$}"
}

# rng_check KERNEL_NAME SHAPE CRNG [APPEND]: one fork row must be
# fork-safe; only an exposure window kills.  A row that could not tell
# (an error: a blind control, a guest that failed) is measured again, up
# to RNG_TRIES times: at 2 vCPUs a control parts from its reference now
# and then, which says nothing of the kernel (a 16 MiB read of the
# unmutated kunit-6.12's baseline, 4,096 fresh records, 2026-12-06; the
# same row measured again at once: 0).
RNG_TRIES=${RNG_TRIES:-3}
case "$RNG_TRIES" in '' | *[!0-9]* | 0*) die "mutants: RNG_TRIES=$RNG_TRIES: a whole number of tries, 1 or more" ;; esac
rng_check() {
	local row verdict try
	row=$RUN_DIR/rng-$1-$2-$3$(rng_guids_suffix)${4:+-${4//[^a-z0-9_]/-}}.json
	for ((try = 1; try <= RNG_TRIES; try++)); do
		rng_row "$1" migrate-file 2 2 "$row" "$2" "$3" "${4:-}" 2>/dev/null || true
		verdict=$("$BUILD/fork-report" -f verdicts "$row" | jq -r '"\(.verdict) \(.why)"')
		case "$verdict" in
		"fork-safe "*) return 0 ;;
		"exposure window "*) echo "$2, crng $3: $verdict"; return 1 ;;
		esac
		[ "$try" = "$RNG_TRIES" ] || progress "mutants: $1: $2, crng $3: measured again ($verdict)"
	done
	echo "error: $2, crng $3: $verdict (in each of $RNG_TRIES tries)"
	return 2
}

# The KUnit build's guests run no suite at boot but kunit_vmfork's
# (machine.sh --kunit): the others run the same code as the measured
# patched kernel plus the mutation.

check_rng() { rng_check "$1" getrandom-16 ready; }
check_vdso() { rng_check "$1" vdso-16 ready; }
check_vdso_tail() { (export RNG_GUIDS=tail && rng_check "$1" vdso-16 ready); }
check_vdso_nomap() { rng_check "$1" vdso-16 ready vmgenid.map_id=0; }
check_long_read() { rng_check "$1" getrandom-16MiB ready; }
check_pre_init() { rng_check "$1" insecure-16 early; }

# The stream runs at MUTANT_WG_STREAM_US (1 ms: 1,000 datagrams a second,
# ten times fork_wireguard's), so that the few milliseconds between the
# resume and the fork notifier, which a mutant without the send path's
# check leaves open, carry packets.
MUTANT_WG_STREAM_US=${MUTANT_WG_STREAM_US:-1000}
# mutant_wg ROW-FUNCTION ARGS...: a WireGuard row at the mutants' rate;
# its error, if any, is in the row.
mutant_wg() { (export WG_STREAM_US=$MUTANT_WG_STREAM_US && "$@" 2>/dev/null) || true; }

check_wireguard() {
	local row traffic verdict delivering
	for traffic in stream idle masked; do
		row=$RUN_DIR/wg-$1-$traffic.json
		mutant_wg wg_row "$1" "$traffic" 2 "$row"
		if [ "$traffic" = masked ] && ! jq -e '.error != null or ([.result.fresh.clones[].gpe | test("STS")] | all)' "$row" >/dev/null 2>&1; then
			echo "error: tunnel masked: the notification was not held back in every clone"
			return 2
		fi
		IFS=$'\t' read -r delivering verdict < <("$BUILD/fork-report" -f verdicts "$row" |
			jq -r '"\(.delivering)\t\(.verdict)\(if .why == "" then "" else ": " + .why end)"') || true
		case "$verdict" in
		safe) ;;
		exposed* | "not rekeyed"*) echo "tunnel $traffic: $verdict"; return 1 ;;
		*) echo "error: tunnel $traffic: $verdict"; return 2 ;;
		esac
		# fork_wireguard's "the stream reaches the peer again in every clone":
		# a tunnel that rekeyed but delivers nothing is broken, not safe.
		if [ "$traffic" != idle ] && [ "$delivering" != 2 ]; then
			echo "tunnel $traffic: the stream reaches the peer again in $delivering of 2 clones"
			return 1
		fi
	done
	row=$RUN_DIR/wg-$1-sibling.json
	mutant_wg wg_sibling_row "$1" 2 "$row"
	verdict=$(wg_sibling_verdict "$row")
	case "$verdict" in
	refused:*) ;;
	accepted:*) echo "sibling: $verdict"; return 1 ;;
	*) echo "error: sibling: ${verdict#error: }"; return 2 ;;
	esac
}

# fork_signal's rows "measured with an identical negative control" and
# "as expected" are about the measurement; every other assertion is an
# errno, a wake, a count or a verdict of the kernel's.
check_signal() {
	local log=$RUN_DIR/signal-$1.log
	KERNEL=$(kernel_path "$1") timeout "$CHECK_TIMEOUT" bash "$FORKSAFE_ROOT/snapshot-tests/fork_signal.sh" \
		>"$log" 2>&1 && return 0
	scenario_verdict "$log" 'measured with an identical negative control$|: as expected$|positive control'
}

# The driver unbound and bound again: a poller asleep across it still
# woken, the bind working, no oops at a fork's notification unbound.
check_rebind() {
	local log=$RUN_DIR/rebind-$1.log
	KERNEL=$(kernel_path "$1") timeout "$CHECK_TIMEOUT" bash "$FORKSAFE_ROOT/snapshot-tests/vmgenid_rebind.sh" \
		>"$log" 2>&1 && return 0
	scenario_verdict "$log" 'lets go of its device$'
}

CHECKS="kunit signal rebind rng long_read pre_init wireguard"
[ -z "$suffix" ] || CHECKS="kunit signal rebind rng vdso vdso_tail vdso_nomap long_read pre_init wireguard"

# checks_for MUTANT: CHECKS, those that look at what the mutant's patch
# changes first: /dev/vmgenid's (drivers/virt/vmgenid.c) signal,
# WireGuard's (drivers/net/wireguard/) KUnit and the tunnel rows, the
# vDSO's (lib/vdso/) the vDSO rows, x86's vvar area (arch/x86/entry/vdso/)
# the rebind rows; the random.c mutants CHECKS' order.
# Every check is still tried before a mutant counts as a survivor; the
# kill named is the first in this order.  It spares a mutant of the
# device KUnit's 3 minutes, and one of WireGuard the RNG rows.
checks_for() {
	local files first="" c rest=""
	files=$(sed -n 's|^+++ b/||p' "$dir/$1.patch" | tr '\n' ' ')
	case "$files" in *lib/vdso/*) first="vdso vdso_tail vdso_nomap" ;; esac
	case "$files" in *drivers/net/wireguard/*) first="$first kunit wireguard" ;; esac
	case "$files" in *drivers/virt/vmgenid.c*) first="$first signal rebind" ;; esac
	case "$files" in *arch/x86/entry/vdso/*) first="$first rebind" ;; esac
	for c in $CHECKS; do
		case " $first " in *" $c "*) ;; *) rest="$rest $c" ;; esac
	done
	# Only checks this series has: a 6.1 mutant has no vDSO rows.
	for c in $first; do
		case " $CHECKS " in *" $c "*) echo -n "$c " ;; esac
	done
	echo "$rest"
}

# run_checks KERNEL_NAME [CHECK...]: "killed\tname: why" for the first
# check (of CHECKS, or those given, in their order) that kills, else
# "error\tname: why" for the first that could not tell, else nothing.
run_checks() {
	local c why rc err="" kname=$1
	shift
	# shellcheck disable=SC2086 # CHECKS is a list of names
	[ $# -gt 0 ] || set -- $CHECKS
	for c in "$@"; do
		progress "mutants: $kname: $c"
		rc=0
		why=$("check_$c" "$kname") || rc=$?
		case "$rc" in
		0) ;;
		1) printf 'killed\t%s: %s\n' "${c//_/-}" "$why"; return ;;
		*) [ -n "$err" ] || err="${c//_/-}: ${why#error: }" ;;
		esac
	done
	[ -z "$err" ] || printf 'error\t%s\n' "$err"
}

progress "mutants: building the unmutated $linux KUnit kernel"
"$FORKSAFE_ROOT/kernel-patches/kernel.sh" build "kunit$suffix" >"$RUN_DIR/build-kunit.log" 2>&1 ||
	die "mutants: the KUnit kernel does not build: $(tail -n 1 "$RUN_DIR/build-kunit.log")"
baseline=$(run_checks "kunit$suffix")
[ -z "$baseline" ] || die "mutants: the unmutated kernel fails a check, which would kill any mutant: ${baseline#*	}"

survivors=0 broken=0 errors=0
{
	echo "| mutant | what it takes out | killed by |"
	echo "| --- | --- | --- |"
} >"$out/mutants$suffix.md.tmp"
for m in $mutants; do
	what=$(sed -n '1s/^Mutant: //p' "$dir/$m.patch")
	progress "mutants: $m: building"
	if ! "$FORKSAFE_ROOT/kernel-patches/kernel.sh" build "mutant-$m$suffix" >"$RUN_DIR/build-$m.log" 2>&1; then
		killer="ERROR, not a mutant: it does not build: $(tail -n 1 "$RUN_DIR/build-$m.log")"
		broken=$((broken + 1))
	else
		# shellcheck disable=SC2046 # a list of check names
		killer=$(run_checks "mutant-$m$suffix" $(checks_for "$m"))
		case "$killer" in
		"") killer="SURVIVED"; survivors=$((survivors + 1)) ;;
		killed*) killer=${killer#*	} ;;
		*) killer="not killed (error: ${killer#*	})"; errors=$((errors + 1)) ;;
		esac
	fi
	progress "mutants: $m: $killer"
	echo "| $m | $what | $killer |" >>"$out/mutants$suffix.md.tmp"
done
mv "$out/mutants$suffix.md.tmp" "$out/mutants$suffix.md"
cat "$out/mutants$suffix.md"
[ "$survivors" = 0 ] || die "mutants: $survivors mutant(s) survived"
[ "$errors" = 0 ] || die "mutants: $errors mutant(s) not killed: a check could not tell (see the table)"
[ "$broken" = 0 ] || die "mutants: $broken mutant(s) do not build: fix them (kernel-patches/$linux/mutants/)"
