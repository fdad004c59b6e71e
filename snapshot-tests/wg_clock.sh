#!/bin/bash
# A WireGuard clone whose wall clock resumed behind its peer, on the
# patched kernel (lib/wg_fork.sh, "a clone whose clock is behind").  The
# original's clock is set an hour behind its last handshake just before
# the snapshot, so every clone's first initiation carries a time its peer
# has already seen and is refused; the fork-safe kernel expired the
# pre-fork sessions at the fork, so the tunnel is down until something
# steps the clock.  One clone per row, streaming through the tunnel:
#  - no step: the clone initiates and the peer answers none of its
#    initiations; the peer's own log (WireGuard's debug messages) holds
#    every one of them as invalid and none taken; it delivers nothing
#    under a new session (the failure an operator meets, and the
#    positive control of the refusal's detection: a clone that sent
#    nothing is an error, not "down"; a peer log that missed them would
#    call the clone "lost");
#  - the fork hooks a guest installs (guest/fork.d/, run by forksafe-hooks
#    on /dev/vmgenid): 10-clock steps the clock from the RTC, 20-wireguard
#    sets the peers again; the tunnel works again within WG_CLOCK_BACK_MS
#    of the resume (the kernel's own next attempt would come
#    REKEY_TIMEOUT, 5 s, after its refused one), the peer's log holds an
#    initiation taken (the one after the step), the clone's clock ends
#    within 3 s of the host's (QEMU's RTC follows it, in whole seconds), and
#    both hooks exited 0.
set -euo pipefail
export WG_WINDOW_S=${WG_WINDOW_S:-4}
WG_BEHIND_S=3600
WG_CLOCK_BACK_MS=3000
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kname=""
for k in $(test_kernels); do [ "$(kernel_role "$k")" = patched ] && { kname=$k; break; }; done
[ -n "$kname" ] || die "wg_clock: KERNELS names no patched kernel (the hooks wait on /dev/vmgenid)"
require_kernels wg_clock "$kname"

t_plan 8
tag="$kname, clock ${WG_BEHIND_S} s behind"
row=$RUN_DIR/wg-$kname-behind-none.json
WG_CLOCK_STEP=none wg_clock_row "$kname" behind "$WG_BEHIND_S" 1 "$row" || true
verdict=$(wg_clock_verdict "$row")
t_diag "$tag, no step: $verdict"
t_eq "$tag, no step: the peer answers none of the clone's initiations" \
	"$(jq -r '.result.clones[0] | if .initiations > 0 and .unanswered_initiations == .initiations then "refused" else "\(.initiations) initiations, \(.unanswered_initiations) unanswered" end' "$row" 2>/dev/null || echo "${verdict}")" refused
t_eq "$tag, no step: the tunnel stays down" "${verdict%%:*}" down
t_eq "$tag, no step: the peer's log holds each initiation invalid, none taken" \
	"$(jq -r '.result.clones[0] | "\(.peer_invalid_initiations == .initiations and .initiations > 0) \(.peer_taken_initiations)"' "$row" 2>/dev/null || echo missing)" "true 0"

row=$RUN_DIR/wg-$kname-behind-hook.json
WG_CLOCK_STEP=hook wg_clock_row "$kname" behind "$WG_BEHIND_S" 1 "$row" || true
verdict=$(wg_clock_verdict "$row")
t_diag "$tag, fork hooks: $verdict"
t_eq "$tag, fork hooks: the tunnel works again" "${verdict%%:*}" working
t_check "$tag, fork hooks: the peer's log holds an initiation taken" \
	test "$(jq -r '.result.clones[0].peer_taken_initiations // 0' "$row" 2>/dev/null || echo 0)" -ge 1
back=$(jq -r '.result.clones[0].first_answer_us // -1' "$row" 2>/dev/null || echo -1)
t_check "$tag, fork hooks: within $WG_CLOCK_BACK_MS ms of the resume (got $([ "$back" -ge 0 ] && echo "$((back / 1000)) ms" || echo never))" \
	test "$back" -ge 0 -a "$back" -le "$((WG_CLOCK_BACK_MS * 1000))"
t_eq "$tag, fork hooks: the clone's clock within 3 s of the host's (the RTC and both readings count whole seconds)" \
	"$(jq -r '.result.clones[0].behind_end_s | if . >= -3 and . <= 3 then "yes" else "\(.) s apart" end' "$row" 2>/dev/null || echo missing)" yes
t_eq "$tag, fork hooks: 10-clock and 20-wireguard exited 0" \
	"$(jq -r '[.result.clones[0].hooks[] | select(test(": (10-clock|20-wireguard): exited 0 "))] | length' "$row" 2>/dev/null || echo missing)" 2
t_done
