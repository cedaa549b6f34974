# The target's module is reloaded while the initiator's end of their
# session is idle and misses the disconnect (fault ignore_disconnects,
# keepalive off): that end still has its path up when the target's new
# instance opens a new session. The peer's connection ids name its
# instance, so the old session goes down with ESTALE at once
# (stats/sessions_stale), not once its path dies and then reconnect_ms
# later, and an op on the old import fails with ESTALE. The target opens
# the session (the initiator's end is passive); then, twice, the
# initiator does: its end is active, and must not refuse the new
# instance's request as crossing it (which it did when its id was the
# greater, half the time: twice, three times in four).
rc=0
fault=/sys/kernel/debug/xferk/fault
deaths() {
	th_run a sh -c 'cat /sys/class/misc/xferk/stats/path_deaths_*' |
		sed 's/^\[.\] //' | paste -sd+ | bc
}

# silent_reload WHO N: WHO (a or b) opens the session, on fresh modules
# (no session of an earlier test or phase to reuse); N names the phase's
# files.
silent_reload() {
	local tok=/ctl/x/silent-$2.tok stale_before deaths_before
	th_reload a || return 1
	th_run a sh -c "echo 0 > /sys/module/xferk/parameters/keepalive_ms &&
		echo 8 > $fault/ignore_disconnects" || return 1
	th_reload b || return 1
	stale_before=$(th_stat a sessions_stale)
	if [ "$1" = a ]; then
		th_start a opener "$TH_XFER" export "/ctl/x/opener-$2.tok" 4096
		th_wait_file "$TH_CTL/x/opener-$2.tok" 120 a || return 1
	fi
	th_start b target "$TH_XFER" export "$tok" 4096
	th_start a hold "$TH_XFER" hold "$tok"
	th_wait_file "$TH_CTL${tok#/ctl}.held" 120 a || return 1
	# From here until the new instance's session is up, the initiator's
	# end must not see its path die (then the old rule would do).
	deaths_before=$(deaths)
	{ th_run b sh -c 'pkill -9 -f "[x]fer export"
		while pgrep -f "[x]fer export" >/dev/null; do sleep 0.1; done' &&
		th_reload b; } || { echo "the target's xferk did not reload"; return 1; }
	th_start b probe "$TH_XFER" export "/ctl/x/silent-probe-$2.tok" 4096
	th_wait_file "$TH_CTL/x/silent-probe-$2.tok" 120 b ||
		{ echo "the target's new instance did not connect"; return 1; }
	if [ "$(deaths)" != "$deaths_before" ]; then
		echo "the initiator's end saw its path die: nothing to show"
		return 1
	fi
	# The new session is up on b once its token exists; on a, just after.
	th_run a sh -c "for i in \$(seq 50); do
		[ \$(cat /sys/class/misc/xferk/stats/sessions_stale) != $stale_before ] && exit 0
		sleep 0.1; done; exit 1" ||
		{ echo "the old session is not stale 5 s after the new instance's is up"; return 1; }
	th_metric "peer_reload_silent_${2}_by_${1}_sessions_stale" \
		"$(($(th_stat a sessions_stale) - stale_before))"
	touch "$TH_CTL${tok#/ctl}.back"
	th_join a hold 120 || return 1
}

n=0
for who in b a a; do
	n=$((n + 1))
	echo "== the session opened by $who"
	silent_reload "$who" "$n" || rc=1
	# What is left of the phase ends before the next reload; what it
	# printed goes to the log.
	for vm in a b; do
		th_run "$vm" sh -c 'pkill -f "[x]fer (hold|export)"
			while pgrep -f "[x]fer (hold|export)" >/dev/null; do sleep 0.1; done'
	done
	th_join b target 10
	th_join b probe 10
	[ "$who" = b ] || th_join a opener 10
done
# Fresh modules, with their default parameters and knobs, for what follows.
th_reload a || rc=1
exit $rc
