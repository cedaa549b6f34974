# The target's module is reloaded while the initiator's end of their
# session is idle and misses the disconnect (fault ignore_disconnects,
# keepalive off): that end still has its path up when the target's new
# instance opens a new session. The peer's connection ids name its
# instance, so the old session goes down with ESTALE at once
# (stats/sessions_stale), not once its path dies and then reconnect_ms
# later, and an op on the old import fails with ESTALE.
rc=0
fault=/sys/kernel/debug/xferk/fault
deaths() {
	th_run a sh -c 'cat /sys/class/misc/xferk/stats/path_deaths_*' |
		sed 's/^\[.\] //' | paste -sd+ | bc
}
th_run a sh -c "echo 0 > /sys/module/xferk/parameters/keepalive_ms &&
	echo 8 > $fault/ignore_disconnects" || rc=1
stale_before=$(th_stat a sessions_stale)
th_start b target "$TH_XFER" export /ctl/x/silent.tok 4096
th_start a hold "$TH_XFER" hold /ctl/x/silent.tok
if th_wait_file "$TH_CTL/x/silent.tok.held" 120 a; then
	deaths_before=$(deaths)
	th_run b sh -c 'pkill -9 -f "[x]fer export"; while pgrep -f "[x]fer export" >/dev/null; do sleep 0.1; done
		rmmod xferk && insmod "$XFERK_MODDIR/kmod/xferk.ko" && chgrp xferk /dev/xferk' ||
		{ echo "the target's xferk did not reload"; rc=1; }
	th_start b probe "$TH_XFER" export /ctl/x/silent-probe.tok 4096
	th_wait_file "$TH_CTL/x/silent-probe.tok" 120 b || rc=1
	if [ "$(deaths)" != "$deaths_before" ]; then
		echo "the initiator's end saw its path die: nothing to show"
		rc=1
	fi
	# The new session is up on b once its token exists; on a, just after.
	th_run a sh -c "for i in \$(seq 50); do
		[ \$(cat /sys/class/misc/xferk/stats/sessions_stale) != $stale_before ] && exit 0
		sleep 0.1; done; exit 1" ||
		{ echo "the old session is not stale 5 s after the new instance's is up"; rc=1; }
	th_metric peer_reload_silent_sessions_stale \
		"$(($(th_stat a sessions_stale) - stale_before))"
	touch "$TH_CTL/x/silent.tok.back"
else
	rc=1
fi
th_join a hold 120 || rc=1
th_run b pkill -f "xfer export /ctl/x/silent-probe.tok"
th_join b probe 60 >/dev/null
th_join b target 10 >/dev/null
th_run a sh -c "echo 2000 > /sys/module/xferk/parameters/keepalive_ms &&
	echo 0 > $fault/ignore_disconnects" || rc=1
exit $rc
