# shellcheck shell=bash
# The drivers' one option parser.  Sourced after qemu.sh; defines
# functions only.
#
#   opts_parse PROG SPEC... -- "$@"
#
# Each SPEC is "--name=VAR" for an option that takes a value, stored in
# the (global) variable VAR, or "--name=VAR=VALUE" for a flag that sets
# VAR to VALUE.  An unknown option or a missing value ends the driver with
# one line naming it.  --help prints the driver's opening comment (the
# script's one description of itself) and exits.

opts_parse() {
	local prog=$1 arg spec name rest matched
	local -a specs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	while [ $# -gt 0 ]; do
		arg=$1 matched=""
		shift
		[ "$arg" != --help ] || { opts_help; exit 0; }
		for spec in "${specs[@]}"; do
			name=${spec%%=*} rest=${spec#*=}
			[ "$arg" = "$name" ] || continue
			matched=1
			if [ "$rest" != "${rest#*=}" ]; then
				printf -v "${rest%%=*}" '%s' "${rest#*=}"
			else
				[ $# -gt 0 ] || die "$prog: $arg needs a value"
				printf -v "$rest" '%s' "$1"
				shift
			fi
		done
		[ -n "$matched" ] || die "$prog: unknown option '$arg'"
	done
}

# The comment block under the script's #! line.
opts_help() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }

# opts_counts PROG WHAT VALUE...: every VALUE is a whole number >= 1.
opts_counts() {
	local prog=$1 what=$2 v
	shift 2
	[ $# -gt 0 ] || die "$prog: $what wants at least one number"
	for v in "$@"; do
		case "$v" in '' | *[!0-9]* | 0*) die "$prog: $what wants whole numbers of at least 1, not '$v'" ;; esac
	done
}
