# The verdict of a WireGuard row at scale with clocks behind (lib/wg_scale.sh,
# scale_behind_row: a VM whose every peer is in use and kept alive, its
# clones' wall clocks behind the last initiation the hub took from the
# key): one line, "VERDICT: why", each fresh clone named with what it
# came to.  A peer counts as answered when the clone's capture holds an
# answer from its port to one of the clone's own initiations (wg-detect).
#   working   every fresh clone had every peer answer: when the last did
#             (ms after its first heartbeat), after how many unanswered
#             initiations
#   down      a clone initiated and not every peer answered: how many did,
#             and how many initiations went unanswered (refused: a
#             timestamp not later than the last the hub took)
#   pre-fork  no clone initiated, and they sent under pre-fork keys:
#             the sessions of the snapshot kept (a kernel that does not
#             expire them: no refusal, and no fork safety either)
#   error     the row's own error, no fresh clone, a control (the
#             original's GUID: no fork) that initiated to any peer (the
#             row cannot tell what started a handshake), or a fresh clone
#             that sent nothing at all (the row cannot tell)
#   jq -r -f wg-scale-clock.jq ROW.json
def ms: . / 1000 | floor;
def plural($n; $word): "\($n) \($word)\(if $n == 1 then "" else "s" end)";
def answered: [.peers[] | select(.handshake_us >= 0)];
def cause($n):
	if .initiations == 0 then
		"\(.name) kept its pre-fork sessions: no initiation, \(plural(.prefork_packets; "packet")) under pre-fork keys"
	elif (answered | length) == $n then
		"\(.name) all \($n) peers answered, the last \([answered[].handshake_us] | max | ms) ms after the resume\(
			if .unanswered_initiations > 0 then ", after \(plural(.unanswered_initiations; "initiation")) unanswered" else "" end)"
	else "\(.name) \(answered | length) of \($n) peers answered, \(.unanswered_initiations) of \(plural(.initiations; "initiation")) unanswered"
	end;
.in_use as $n | (.result.fresh.clones // []) as $c |
if .error then "error: \(.error)"
elif ($c | length) == 0 then "error: a row needs fresh clones"
elif ([.result.control.clones[]?.peers[]] | length) > 0 then
	"error: the control (no fork) initiated to \([.result.control.clones[].peers[]] | length) peers: the row cannot tell what started a handshake"
elif any($c[]; .initiations == 0 and .prefork_packets == 0) then
	"error: \([$c[] | select(.initiations == 0 and .prefork_packets == 0) | .name] | join(", ")) sent nothing: the row cannot tell"
elif all($c[]; .initiations > 0 and (answered | length) == $n) then "working: \([$c[] | cause($n)] | join("; "))"
elif all($c[]; .initiations == 0) then "pre-fork: \([$c[] | cause($n)] | join("; "))"
else "down: \([$c[] | cause($n)] | join("; "))"
end
