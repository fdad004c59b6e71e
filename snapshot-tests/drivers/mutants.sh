#!/bin/bash
# make mutants: does every test that guards the series fail when the code it
# guards is taken out?  Each kernel-patches/VERSION/mutants/NAME.patch (its
# first line says what it removes; VERSION is LINUX, 6.1 unless said) is
# applied alone on top of that series, in the KUnit build (kernel.sh build
# mutant-NAME, -6.12 at its end for 6.12), and the checks below run on
# that kernel, cheapest first, until one fails: that check kills the
# mutant.  A mutant no check kills survives, and the run fails.  The same
# checks run first on the unmutated KUnit build, where every one must pass:
# a check that fails there would kill anything and prove nothing.
#
#   mutants.sh [--mutants "NAME..."] [--out DIR]
#
# The checks:
#   kunit      snapshot-tests/kunit_vmfork.sh on the kernel: every KUnit
#              case passes, and deterministic boots show the fork's ID
#              reaching the output
#   rng        a migrate-file fork at 2 vCPUs, getrandom() loops: fork-safe
#   vdso       6.12 only: the same with vDSO getrandom() loops
#   long-read  the same with 16 MiB getrandom() calls: fork-safe (at most
#              the page in flight)
#   pre-init   the same with GRND_INSECURE reads, snapshot in CRNG_EARLY:
#              fork-safe
#   wireguard  fork_wireguard's rows, streaming and idle: safe
#   signal     snapshot-tests/fork_signal.sh on the kernel: /dev/vmgenid's
#              errors, one poll() wake per fork, the checked DRBG fork-safe
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

# check_NAME KERNEL_NAME: 0 when the kernel passes; on failure, why on stdout.
check_kunit() {
	local log=$RUN_DIR/kunit-$1.log
	if KERNEL=$(kernel_path "$1") bash "$FORKSAFE_ROOT/snapshot-tests/kunit_vmfork.sh" >"$log" 2>&1; then
		return 0
	fi
	# The failing KUnit cases by name, else the scenario's first failure.
	awk '/^not ok/ { sub(/^not ok [0-9]+ /, ""); if (!first) first = $0
		if (sub(/^kunit: [a-z_]+: /, "") && $0 !~ / passed$/) cases = cases (cases ? ", " : "") $0 }
		END { print cases ? cases : first }' "$log"
	return 1
}

# rng_check KERNEL_NAME SHAPE CRNG: one fork row must be fork-safe.
rng_check() {
	local row=$RUN_DIR/rng-$1-$2-$3.json verdict
	rng_row "$1" migrate-file 2 2 "$row" "$2" "$3" 2>/dev/null || true
	verdict=$("$BUILD/fork-report" -f verdicts "$row" | jq -r '"\(.verdict) \(.why)"')
	[ "${verdict%% *}" = fork-safe ] && return 0
	echo "$2, crng $3: $verdict"
	return 1
}

# The KUnit suites wait for the crng to be ready at boot; a guest that must
# be snapshotted before that runs none of them (a glob no suite matches), and
# then runs the same code as the measured patched kernel plus the mutation.
export PREINIT_EXTRA="kunit.filter_glob=no-suite"

check_rng() { rng_check "$1" getrandom-16 ready; }
check_vdso() { rng_check "$1" vdso-16 ready; }
check_long_read() { rng_check "$1" getrandom-16MiB ready; }
check_pre_init() { rng_check "$1" insecure-16 early; }

check_wireguard() {
	local row traffic verdict
	for traffic in stream idle; do
		row=$RUN_DIR/wg-$1-$traffic.json
		wg_row "$1" "$traffic" 2 "$row" 2>/dev/null || true
		verdict=$("$BUILD/fork-report" -f verdicts "$row" | jq -r '"\(.verdict)\(if .why == "" then "" else ": " + .why end)"')
		[ "$verdict" = safe ] || { echo "tunnel $traffic: $verdict"; return 1; }
	done
}

check_signal() {
	local log=$RUN_DIR/signal-$1.log
	if KERNEL=$(kernel_path "$1") bash "$FORKSAFE_ROOT/snapshot-tests/fork_signal.sh" >"$log" 2>&1; then
		return 0
	fi
	grep -m1 '^not ok' "$log" | sed 's/^not ok [0-9]* //' || echo "fork_signal failed: $(tail -n 1 "$log")"
	return 1
}

CHECKS="kunit rng long_read pre_init wireguard signal"
[ -z "$suffix" ] || CHECKS="kunit rng vdso long_read pre_init wireguard signal"

# run_checks KERNEL_NAME: the first check that fails, "name: why", or nothing.
run_checks() {
	local c why
	for c in $CHECKS; do
		progress "mutants: $1: $c"
		if ! why=$("check_$c" "$1"); then
			echo "${c//_/-}: $why"
			return
		fi
	done
}

progress "mutants: building the unmutated $linux KUnit kernel"
"$FORKSAFE_ROOT/kernel-patches/kernel.sh" build "kunit$suffix" >"$RUN_DIR/build-kunit.log" 2>&1 ||
	die "mutants: the KUnit kernel does not build: $(tail -n 1 "$RUN_DIR/build-kunit.log")"
baseline=$(run_checks "kunit$suffix")
[ -z "$baseline" ] || die "mutants: the unmutated kernel fails a check, which would kill any mutant: $baseline"

survivors=0 broken=0
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
		killer=$(run_checks "mutant-$m$suffix")
	fi
	if [ -z "$killer" ]; then
		killer="SURVIVED"
		survivors=$((survivors + 1))
	fi
	progress "mutants: $m: $killer"
	echo "| $m | $what | $killer |" >>"$out/mutants$suffix.md.tmp"
done
mv "$out/mutants$suffix.md.tmp" "$out/mutants$suffix.md"
cat "$out/mutants$suffix.md"
[ "$survivors" = 0 ] || die "mutants: $survivors mutant(s) survived"
[ "$broken" = 0 ] || die "mutants: $broken mutant(s) do not build: fix them (kernel-patches/$linux/mutants/)"
