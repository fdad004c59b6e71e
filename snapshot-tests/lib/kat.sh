# shellcheck shell=bash
# The known-answer inputs (snapshot-tests/analyzers/kat/) run through the
# analyzers, for the scenarios that check what the analyzers and the
# report make of them.  Sourced; defines functions only.

# kat_setup: ROOT, BUILD (the host tools), KAT (the kat/ folder), and
# WORK, a scratch directory removed on exit.
kat_setup() {
	ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	BUILD=${FORKSAFE_BUILD:-$ROOT/build}
	KAT=$ROOT/snapshot-tests/analyzers/kat
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
}

# kat_read KIND DIR TOOL: case DIR of KIND (rng, wg) read into
# $WORK/KIND/CASE by kat_KIND; else a failed test naming TOOL, and 1.
kat_read() {
	local kind=$1 case
	case=$(basename "$2")
	"kat_$kind" "$case" "$WORK/$kind/$case" 2>"$WORK/errors" && return 0
	t_fail "$kind/$case: $3 reads the case"
	t_diag "$(tail -n 1 "$WORK/errors")"
	return 1
}

# kat_rng CASE OUT: rng/CASE's dumps written into OUT and read by
# rng-exposure into OUT/result.json; on failure, why on stderr.
kat_rng() {
	local case=$1 out=$2
	local -a args
	mkdir -p "$out"
	awk -v out="$out" -f "$KAT/mkdumps.awk" "$KAT/rng/$case/records" >"$out/args" &&
		mapfile -t args <"$out/args" &&
		"$BUILD/rng-exposure" "${args[@]}" >"$out/result.json"
}

# kat_wg CASE OUT: each wg/CASE/*.frames made a capture by pcap-synth, all
# of them read by one wg-detect (the VM on port 51820, its heartbeat to
# port 9, and the words of wg/CASE/args) into OUT/detect.json, but
# original.frames, the original's capture, given with -o; on failure, why
# on stderr.
kat_wg() {
	local case=$1 out=$2 f
	local -a pcaps=() args=()
	mkdir -p "$out"
	[ ! -f "$KAT/wg/$case/args" ] || read -ra args <"$KAT/wg/$case/args"
	for f in "$KAT/wg/$case"/*.frames; do
		pcaps+=("$out/$(basename "$f" .frames).pcap")
		"$BUILD/pcap-synth" "$f" >"${pcaps[-1]}" || return 1
		[ "${f##*/}" != original.frames ] || { args+=(-o "${pcaps[-1]}"); unset 'pcaps[-1]'; }
	done
	"$BUILD/wg-detect" -p 51820 -m 9 "${args[@]}" -j "$out/detect.json" "${pcaps[@]}" >/dev/null
}

# kat_rng_row KERNEL METHOD RESULT.json [VCPUS]: a fork-report row (1 vCPU
# unless told) of rng-exposure's RESULT, on stdout.
kat_rng_row() {
	jq -c --arg k "$1" --arg m "$2" --argjson v "${4:-1}" \
		'{kind: "rng", kernel: $k, method: $m, vcpus: $v, result: .}' "$3"
}

# kat_wg_row KERNEL FRESH.json CONTROL.json: a fork-report row of a
# streaming tunnel, from wg-detect's reports of the fresh clones and of the
# controls, on stdout.
kat_wg_row() {
	jq -n -c --arg k "$1" --slurpfile f "$2" --slurpfile c "$3" \
		'{kind: "wg", kernel: $k, traffic: "stream", result: {fresh: $f[0], control: $c[0]}}'
}
