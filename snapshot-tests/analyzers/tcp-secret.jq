# The verdict of a TCP secret row (lib/tcp_fork.sh): one line, "VERDICT:
# why".  A hash is an ISN minus the clock >> 6, mod 2^32; two hashes
# within 2^16 (4.2 ms of clock between the reads) are one secret, a
# chance of 2^17 / 2^32 = 3e-5 for two independent ones.
#   shared   every clone gives the original's hash: the fork kept it
#   renewed  no clone does
#   mixed    some do
#   error    the row's own error, no clone, or a boot that is no clone
#            giving the original's hash too (the row cannot tell)
#   jq -r -f tcp-secret.jq ROW.json
def dist($a; $b): (($a - $b) % 4294967296 + 4294967296) % 4294967296 | if . > 2147483648 then 4294967296 - . else . end;
def same($a; $b): dist($a; $b) < 65536;
if .error then "error: \(.error)"
elif (.result.clones | length) == 0 then "error: no clone"
elif same(.result.cold; .result.original) then "error: blind: a boot that is no clone gave the original's hash (\(dist(.result.cold; .result.original)) apart)"
else .result as $r | [$r.clones[] | select(same(.; $r.original))] | length as $n |
	if $n == ($r.clones | length) then "shared: \($n) of \($n) clones gave the original's hash (at most \([$r.clones[] | dist(.; $r.original)] | max) apart, of 2^32); a boot that is no clone \(dist($r.cold; $r.original)) apart"
	elif $n == 0 then "renewed: no clone of \($r.clones | length) gave the original's hash"
	else "mixed: \($n) of \($r.clones | length) clones gave the original's hash"
	end
end
