# cold-report.jq: the cold-clone table and its controls, from the rows of
# snapshot-tests/lib/cold.sh (jq -s, one array of rows).
#
#   jq -rs --arg f table    -f cold-report.jq ROW.json...   markdown table
#   jq -rs --arg f controls -f cold-report.jq ROW.json...   one line per kernel:
#       "ok KERNEL ..." or "blind KERNEL: WHY"
#   jq -rs --arg f findings -f cold-report.jq ROW.json...   what the rows say
#       about the seed documents' questions, where they were measured
#
# For each moment the sampler printed, a row's clones are "identical"
# (one output among them), "differ" (as many outputs as clones) or "K of N
# alike"; an identical deterministic row whose output is not its
# reference's is marked "(≠ ref)": the factor changed the output, the same
# way in every clone.  The reference is the control, and for write-other
# the write row (the same command line, another seed).
# The controls, per kernel: the deterministic row with nothing that varies
# (no vmgenid, no seed, no RDRAND, no virtio-rng) must be identical at every
# moment, or identity cannot be measured; the same row with a fresh GUID per
# boot must differ at the first read, or divergence cannot be.

def moments: ["first", "seeded", "init", "later"];

def is_control: .clock == "det" and .genid == "absent" and .seed == "none"
	and .cpu == "qemu64" and .rng == "no";
def is_positive: .clock == "det" and .genid == "fresh" and .seed == "none"
	and .cpu == "qemu64" and .rng == "no";

# The outputs of a row's clones at moment m ("blocked" where it blocked).
def outputs($m): [.result.clones[] | .[$m] | .bytes // "blocked"];

def alike($m): outputs($m) | (unique | length) as $d | length as $n |
	if $d == 1 then "identical" elif $d == $n then "differ" else "\($n - $d + 1) of \($n) alike" end;

def median: sort | if length == 0 then null else .[length / 2 | floor] end;

def cell($m; $ref):
	if outputs($m)[0] == "blocked" and (outputs($m) | unique | length) == 1 then "blocked"
	else alike($m) + (if $ref != null and .clock == "det" and alike($m) == "identical"
			and ($ref | outputs($m))[0] != outputs($m)[0] then " (≠ ref)" else "" end)
	end;

def ms: if . == null then "never" else tostring end;

def measured($rows; cond): [$rows[] | select(has("result")) | select(cond)][0];

def reference_of($rows): . as $r |
	if .seed == "write-other" then
		measured($rows; .kernel == $r.kernel and .clock == $r.clock and .genid == $r.genid
			and .seed == "write" and .cpu == $r.cpu and .rng == $r.rng)
	else measured($rows; is_control and .kernel == $r.kernel) end;

def init_ms: [.result.clones[].crng_init_ms | select(. != null)] | median;

def table($rows):
	"| kernel | clock | genid | seed | cpu | rng | first read | after the seed | crng ready | 2 s later | crng init (ms) |",
	"|---|---|---|---|---|---|---|---|---|---|---|",
	($rows[] | reference_of($rows) as $ref |
		"| \(.kernel) | \(.clock) | \(.genid) | \(.seed) | \(.cpu) | \(.rng) | " +
		if has("error") then "error: \(.error) |||||"
		else ([moments[] as $m | cell($m; $ref)] | join(" | ")) + " | " + (init_ms | ms) + " |"
		end);

# The seed documents' questions, answered by deterministic rows of one kernel.
def findings($rows):
	[$rows[].kernel] | unique[] as $k |
	measured($rows; is_control and .kernel == $k) as $c |
	measured($rows; .kernel == $k and .clock == "det" and .genid == "absent" and .seed == "write"
		and .cpu == "qemu64" and .rng == "no") as $w |
	measured($rows; .kernel == $k and .clock == "det" and .genid == "absent" and .seed == "write-other"
		and .cpu == "qemu64" and .rng == "no") as $o |
	measured($rows; .kernel == $k and .clock == "det" and .genid == "absent" and .seed == "credit"
		and .cpu == "qemu64" and .rng == "no") as $cr |
	measured($rows; .kernel == $k and .clock == "det" and .genid == "absent" and .seed == "none"
		and .cpu == "no-tsc" and .rng == "no") as $nt |
	(if $w != null and $o != null then
		if ($w | outputs("first"))[0] != ($o | outputs("first"))[0] then
			"\($k): write and write-other differ before the seed, so they cannot say what the seed did"
		else
			"\($k): a seed written to /dev/urandom without credit, with the crng not ready (ready=\($w.result.clones[0].seeded.ready), entropy_avail \($w.result.clones[0].first.entropy) bits), " +
			(if ($w | outputs("seeded"))[0] != ($o | outputs("seeded"))[0]
			 then "changed the very next output (its bytes reach early output)"
			 else "did not change the next output" end) +
			(if ($w | outputs("init"))[0] != ($o | outputs("init"))[0]
			 then ", and the output once the crng was ready" else ", nor the output once the crng was ready" end)
		end
	else empty end),
	(if $c != null and $cr != null then
		"\($k): crng ready at \($c | init_ms | ms) ms with no seed, at \($cr | init_ms | ms) ms with the seed credited"
	else empty end),
	(if $nt != null then
		"\($k): without a cycle counter (qemu64,-tsc) " +
		(if ($nt.result.clones[0].init | has("blocked_s"))
		 then "the first blocking getrandom() was still blocked after \($nt.result.clones[0].init.blocked_s) s"
		 else "the crng was ready at \($nt | init_ms | ms) ms; the first blocking getrandom() returned at \($nt.result.clones[0].init.t_ms) ms" end)
	else empty end);

def controls($rows):
	[$rows[].kernel] | unique[] as $k |
	[$rows[] | select(.kernel == $k)] as $mine |
	[$mine[] | select(is_control)][0] as $c |
	[$mine[] | select(is_positive)][0] as $p |
	if $c == null or ($c | has("error")) then "blind \($k): no measured control row (det, no vmgenid, no seed, qemu64, no virtio-rng)"
	elif ($c.result.clones | length) < 2 or ($p != null and ($p | has("result")) and ($p.result.clones | length) < 2) then
		"blind \($k): one boot per row has nothing to compare with"
	elif $p == null or ($p | has("error")) then "blind \($k): no measured fresh-GUID row to show that clones can differ"
	elif ([moments[] as $m | $c | alike($m)] | unique) != ["identical"] then
		"blind \($k): the control's clones are not identical (" +
		([moments[] as $m | "\($m): \($c | alike($m))"] | join(", ")) + "), identity cannot be measured here"
	elif ($p | alike("first")) == "identical" then
		"blind \($k): clones with fresh GUIDs were identical at the first read"
	else "ok \($k): the control's clones are identical at every moment, fresh-GUID clones differ"
	end;

. as $rows |
if $f == "table" then table($rows)
elif $f == "controls" then controls($rows)
elif $f == "findings" then findings($rows)
else error("cold-report: --arg f table|controls|findings") end
