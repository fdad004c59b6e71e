# The verdict of a WireGuard sibling row (lib/wg_fork.sh's
# wg_sibling_measure): one line, "VERDICT: why".
#   refused   no fresh clone accepted a datagram the sibling sealed under
#             the pre-fork session, and none moved its endpoint to it
#   accepted  a fresh clone did either
#   error     the row's own error, or a measurement that could not tell:
#             no fresh clone or no control, a clone that saw none of the
#             sibling's datagrams on its wire, a control (no fork) that
#             accepted none of them
#   jq -r -f wg-sibling.jq ROW.json
def clones($s): [.result.clones[] | select(.set == $s)];
def fresh: clones("fresh");
def controls: clones("control");
.result.own_endpoint as $own |
if .error then "error: \(.error)"
elif (fresh | length) == 0 or (controls | length) == 0 then "error: a row needs fresh clones and a control"
elif any(.result.clones[]; .offered == 0) then
	"error: \([.result.clones[] | select(.offered == 0) | .name] | join(", ")) saw no datagram from the sibling on its wire"
elif any(controls[]; .accepted == 0) then "error: blind: a control (no fork) accepted nothing from the sibling"
elif any(fresh[]; .accepted > 0 or .endpoint != $own) then
	"accepted: \([fresh[] | "\(.name) accepted \(.accepted) of \(.offered), endpoint \(.endpoint)"] | join("; "))"
else
	"refused: \([fresh[] | .offered] | add) datagrams offered to \(fresh | length) fresh clones, none accepted, endpoints kept; the controls accepted \([controls[] | .accepted] | add)"
end
