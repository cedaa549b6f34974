# The target VM dies (its qemu process is killed) with 1000 WRITE ops in
# flight from the initiator: every op settles by its deadline plus its
# drain budget, no snapshot says buffer_reusable before the op is
# physically complete and a new op on the dead session does not succeed.
# The initiator's end of the session (the target opened it) waits for the
# target to come back: reconnect_ms outlasts the reboot by construction,
# the most this test waits for the VM to boot and for its probe export,
# and a minute more. When the target is back as a new instance and opens a new session, the old
# one is stale: ops on the old import fail with ESTALE.
# The initiator's counters go back to where they were and xferk unloads
# cleanly. A new connection, export and token work; the old instance's
# token is refused.
rc=0
probe_s=120
window_ms=$(((TH_BOOT_READY_S + probe_s + 60) * 1000))
th_run a sh -c "echo $window_ms > /sys/module/xferk/parameters/reconnect_ms" || rc=1
stale_before=$(th_stat a sessions_stale)
th_start b target "$TH_XFER" export /ctl/x/kill.tok $((64 << 20))
th_start a flood env XFERK_FLOOD_STALE=/ctl/x/kill.tok.back \
	XFERK_FLOOD_BACK_MS="$window_ms" \
	"$TH_XFER" flood /ctl/x/kill.tok 1000 65536 20000 5000
if th_wait_file "$TH_CTL/x/kill.tok.flood" 180 a; then
	sleep 0.5
	touch "$TH_CTL/x/kill.tok.killing"
	th_kill b
	t_kill=$(date +%s.%N)
	touch "$TH_CTL/x/kill.tok.killed"
else
	echo "the initiator did not start its ops"
	rc=1
fi
t_boot=$(date +%s.%N)
th_boot b || exit 1
th_start b probe "$TH_XFER" export /ctl/x/kill-probe.tok 4096
th_wait_file "$TH_CTL/x/kill-probe.tok" "$probe_s" b || rc=1
touch "$TH_CTL/x/kill.tok.back"
th_join a flood 180 || rc=1
th_run b pkill -f "xfer export /ctl/x/kill-probe.tok"
th_join b probe 60 >/dev/null
th_metric peer_killed_flood_wall_s "$(echo "$(date +%s.%N) - $t_kill" | bc)"
th_metric peer_killed_sessions_stale "$(($(th_stat a sessions_stale) - stale_before))"
th_reload a || { echo "xferk did not unload cleanly"; rc=1; }

th_start b target "$TH_XFER" export /ctl/x/kill-new.tok $((1 << 20))
th_run a "$TH_XFER" roundtrip /ctl/x/kill-new.tok $((1 << 20)) || rc=1
th_join b target 60 || rc=1
th_metric peer_back_to_transfer_s "$(echo "$(date +%s.%N) - $t_boot" | bc)"
th_run a "$TH_XFER" stale /ctl/x/kill.tok || rc=1
exit $rc
