# The verdict of a WireGuard row of clones alive side by side with one key
# (lib/wg_fork.sh's wg_both_measure): one line, "VERDICT: why".
#   exposed    the clones reused (key, nonce) pairs: wg-detect found the
#              same pair sealed by two of them
#   all heard  no reuse, and the peer received datagrams from every clone
#   some heard no reuse, and the peer received nothing from some clones
#   none heard no reuse, and the peer received nothing from any clone
#   error      the row's own error, no clone, a clone that sent nothing on
#              its wire (no data, no initiation: its stream never ran),
#              or datagrams the peer's sink could not put to a clone (a
#              sender that is neither a clone nor the original, or one
#              past the sink's 16 totals): who was heard is unknown
# The why names, per clone, what the peer received from it and when
# (seconds since the peer's restore, from its sink's runs), its first
# answer or its unanswered initiations, how often the peer went from one
# sender to another, and, where the row has the peer's log, how many
# initiations (of any clone: they share an address) it took and refused;
# those it took beyond the ones answered were taken and their answers
# reached no clone that sent them ("went astray": the clones share one
# MAC, and a switch gives the answer to whichever clone sent last); the
# clones' wires show where: responses a clone received beyond those to
# its own answered initiations reached a clone that had not sent them.
#   jq -r -f wg-both.jq ROW.json
def s: . / 1000000 * 10 | floor / 10;
def plural($n; $word): "\($n) \($word)\(if $n == 1 then "" else "s" end)";
def clone($r):
	.name as $n | [$r.runs[] | select(.sender == $n)] as $mine |
	([$r.senders[] | select(.sender == $n)][0]) as $total |
	if .delivered > 0 then
		"\($n) heard: \(.delivered) datagrams from \($total.first_us | s) to \($total.last_us | s) s, in \(
			plural($mine | length; "run"))\(if $r.runs_dropped > 0 then " kept" else "" end)" +
		(if .first_answer_us >= 0 then ", first answer \(.first_answer_us / 1000 | floor) ms after its resume" else ", no answer of its own" end)
	elif .initiations == 0 then "\($n) not heard, never initiated"
	elif .first_answer_us < 0 then "\($n) not heard: \(plural(.initiations; "initiation")), none answered"
	else "\($n) not heard: an answer at \(.first_answer_us / 1000 | floor) ms, nothing delivered" end;
.result as $r | $r.clones as $c |
if .error then "error: \(.error)"
elif ($c | length) == 0 then "error: a row needs clones"
elif any($c[]; .data_sent == 0 and .initiations == 0) then
	"error: \([$c[] | select(.data_sent == 0 and .initiations == 0) | .name] | join(", ")) sent nothing: its stream never ran"
elif $r.senders_dropped > 0 or any($r.senders[]; .sender as $s | [$c[].name, "original"] | index($s) | not) then
	"error: the peer heard senders that are no clone (\([$r.senders[] | select(.sender as $s | [$c[].name, "original"] | index($s) | not) | .sender] | join(", "))\(
		if $r.senders_dropped > 0 then ", \($r.senders_dropped) datagrams past the sink's 16 senders" else "" end)): whom it heard is unknown"
else
	([$c[].initiations] | add) as $sent | ([$c[].unanswered_initiations] | add) as $unanswered |
	"; the peer switched senders \(plural($r.switches; "time"))\(
		if $r.peer_taken_initiations != null then
			", took \($r.peer_taken_initiations) of the clones' \(plural($sent; "initiation")) and logged \($r.peer_invalid_initiations) invalid\(
			($r.peer_taken_initiations - ($sent - $unanswered)) as $astray |
			if $astray > 0 and $unanswered > 0 then
				" (so \([$astray, $unanswered] | min) of the \($unanswered) unanswered were taken: the answer went astray)"
			else "" end)"
		else "" end)\(
		if all($c[]; .received.response != null) then
			(([$c[].received.response] | add) - ($sent - $unanswered)) as $elsewhere |
			if $elsewhere > 0 then "; \(plural($elsewhere; "answer")) reached a clone that had not sent the initiation"
			else "" end
		else "" end)" as $sw |
	(if $r.runs_dropped > 0 then " (\($r.runs_dropped) runs past the sink's 256 not kept)" else "" end) as $cut |
	([$c[] | clone($r)] | join("; ")) as $why |
	if $r.nonce_reuse_pairs > 0 then "exposed: \($r.nonce_reuse_pairs) (key, nonce) pairs sealed by two clones; \($why)\($sw)\($cut)"
	elif all($c[]; .delivered > 0) then "all heard: \($why)\($sw)\($cut)"
	elif any($c[]; .delivered > 0) then "some heard: \($why)\($sw)\($cut)"
	else "none heard: \($why)\($sw)\($cut)" end
end
