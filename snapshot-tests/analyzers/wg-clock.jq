# The verdict of a WireGuard clock row (lib/wg_fork.sh's wg_clock_measure:
# clones whose wall clock resumed behind the last handshake their peer
# accepted): one line, "VERDICT: why", each clone named with what it
# came to.
#   working  every clone had an initiation answered and the peer received
#            its datagrams: how long after its first heartbeat the first
#            answer came, and how many of its initiations went unanswered
#   down     a clone did not: why, from its wire and the peer's view:
#            "refused" (it initiated, the peer answered none; where the
#            row has the peer's log, the peer logged them invalid: a
#            timestamp not later than the last it took from the key),
#            "lost" (it initiated, and the peer logged none of them,
#            taken or invalid: they never reached it), "unanswered"
#            (the peer logged one taken, but no answer reached the
#            clone), "never initiated", or "no data" (an answer but
#            nothing delivered)
#   error    the row's own error, no clone, or a clone that sent nothing
#            at all (its stream never ran: the row could not tell)
# Whether the new session is post-fork is fork_wireguard's to judge; here
# the pre-fork packets are only reported.
#   jq -r -f wg-clock.jq ROW.json
def ms: . / 1000 | floor;
def plural($n; $word): "\($n) \($word)\(if $n == 1 then "" else "s" end)";
def refused: if .unanswered_initiations == 0 then "" else
	", after \(plural(.unanswered_initiations; "initiation")) unanswered" end;
def working: .first_answer_us >= 0 and .delivered > 0;
def cause:
	if working then "\(.name) working \(.first_answer_us | ms) ms after the resume\(refused)"
	elif .initiations == 0 then "\(.name) never initiated"
	elif .first_answer_us < 0 and .peer_invalid_initiations == 0 and .peer_taken_initiations == 0 then
		"\(.name) lost: \(plural(.initiations; "initiation")), none answered, none in the peer's log"
	elif .first_answer_us < 0 and .peer_taken_initiations > 0 then
		"\(.name) unanswered: \(plural(.initiations; "initiation")), the peer took \(.peer_taken_initiations) and no answer came back"
	elif .first_answer_us < 0 then "\(.name) refused: \(plural(.initiations; "initiation")), none answered\(
		if .peer_took_handshake == false then ", the peer took no handshake" else "" end)\(
		if .peer_invalid_initiations > 0 then
			", the peer logged \(plural(.peer_invalid_initiations; "invalid initiation")) (a timestamp not later than the last it took)"
		else "" end)"
	else "\(.name) no data: an answer at \(.first_answer_us | ms) ms, \(.delivered) datagrams delivered" end;
.result.clones as $c |
if .error then "error: \(.error)"
elif ($c | length) == 0 then "error: a row needs clones"
elif any($c[]; .data_sent == 0 and .initiations == 0) then
	"error: \([$c[] | select(.data_sent == 0 and .initiations == 0) | .name] | join(", ")) sent nothing: its stream never ran"
elif all($c[]; working) then "working: \([$c[] | cause] | join("; "))"
else "down: \([$c[] | cause] | join("; "))"
end
