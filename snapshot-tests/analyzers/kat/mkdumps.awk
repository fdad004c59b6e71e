# The recorder dumps of a known-answer case, from its "records" file
# (the format is in README.md beside this file).
#
#   awk -v out=DIR -f mkdumps.awk CASE/records
#
# Writes DIR/NAME.dump for every dump the case names and prints the
# arguments of rng-exposure, one a line: "-w" and N when the case sets a
# window, "-f" and N when it sets a control's permille, then NAME=DIR/NAME.dump in the order the names first appear (the
# reference, the control, then the clones).  Exit 2 with FILE:LINE on a
# line it cannot read.
function fail(why) {
	printf "%s:%d: %s\n", FILENAME, FNR, why >"/dev/stderr"
	bad = 1
	exit 2
}

/^[ \t]*(#|$)/ { next }

$1 == "shape" {
	if (NF != 3) fail("shape wants a name and a unit")
	shape = $2
	unit = $3
	next
}

$1 == "window" {
	if (NF != 2 || $2 !~ /^[0-9]+$/) fail("window wants a number")
	window = $2
	next
}

$1 == "permille" {
	if (NF != 2 || $2 !~ /^[0-9]+$/) fail("permille wants a number")
	permille = $2
	next
}

{
	name = $1
	stream = $2
	if (shape == "") fail("no shape line before the first dump")
	if (stream !~ /^[0-9]+:$/) fail("a dump line is NAME STREAM: RECORDS...")
	stream = substr(stream, 1, length(stream) - 1) + 0
	file = out "/" name ".dump"
	if (!(name in offset)) {
		offset[name] = ndumps
		order[ndumps++] = name
		printf "H %s %s\n", shape, unit >file
	}
	seq = 0
	after = 0
	changed = 0
	for (i = 3; i <= NF; i++) {
		tok = $i
		if (tok == "|") {
			after = 1
			continue
		}
		if (substr(tok, 1, 1) == "*") {
			changed = 1
			tok = substr(tok, 2)
		}
		if (tok ~ /^[0-9]+\.\.[0-9]+$/) {
			split(tok, range, /\.\./)
			lo = range[1] + 0
			hi = range[2] + 0
		} else if (tok ~ /^[0-9]+$/) {
			lo = hi = tok + 0
		} else {
			fail("'" tok "' is not a record (N, N..M, *N or *N..M)")
		}
		# Past the snapshot point every dump keeps its own clock.
		for (fp = lo; fp <= hi; fp++) {
			printf "R %d %d %x %d %d\n", stream, seq, fp, seq * 1000 + after * offset[name], changed >file
			seq++
		}
	}
}

END {
	if (bad)
		exit 2
	if (window != "")
		printf "-w\n%s\n", window
	if (permille != "")
		printf "-f\n%s\n", permille
	for (i = 0; i < ndumps; i++) {
		close(out "/" order[i] ".dump")
		printf "%s=%s/%s.dump\n", order[i], out, order[i]
	}
}
