# shellcheck shell=bash
# /dev/vmgenid's watcher in a guest (the agent's vmgenid-watch: poll()
# wakes and uevents counted), for the scenarios that fork it
# (fork_signal, vmgenid_rebind).  Sourced by measure.sh; defines
# functions only.
WATCH_TIMEOUT_S=30

# watch_status NAME: "WAKES UEVENTS GENERATION" of NAME's watcher.
watch_status() {
	local out
	out=$(guest_call "$1" vmgenid-watch status) || return 1
	echo "$(agent_field wakes <<<"$out") $(agent_field uevents <<<"$out") $(agent_field generation <<<"$out")"
}

# watch_is NAME "WAKES UEVENTS GENERATION": whether NAME's watcher says so.
watch_is() { [ "$(watch_status "$1")" = "$2" ]; }

# watch_until NAME "WAKES UEVENTS GENERATION": wait (WATCH_TIMEOUT_S at
# most) until NAME's watcher says so; WATCH_WAITED, the seconds it took
# (or the timeout), is how long a negative control then waits.
watch_until() {
	local start=$SECONDS
	wait_until "$WATCH_TIMEOUT_S" watch_is "$1" "$2" || true
	# shellcheck disable=SC2034 # for the caller
	WATCH_WAITED=$((SECONDS - start))
}
