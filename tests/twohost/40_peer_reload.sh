# The target's module is reloaded under load: its exporting process is
# killed and xferk unloaded and loaded again while the initiator has 1000
# WRITE ops in flight. Every op settles by its deadline plus its drain
# budget; the initiator's counters go back. Once the target is back as a
# new instance and opens a new session, ops on the old import fail with
# ESTALE; a new export and token work and the old instance's token is
# refused.
rc=0
th_start b target "$TH_XFER" export /ctl/x/reload.tok $((1000 * 65536))
th_start a flood env XFERK_FLOOD_STALE=/ctl/x/reload.tok.killed \
	"$TH_XFER" flood /ctl/x/reload.tok 1000 65536 20000 5000
if th_wait_file "$TH_CTL/x/reload.tok.flood" 180 a; then
	sleep 0.3
	touch "$TH_CTL/x/reload.tok.killing"
	{ th_run b sh -c 'pkill -9 -f "[x]fer export"
		while pgrep -f "[x]fer export" >/dev/null; do sleep 0.1; done' &&
		th_reload b; } || { echo "the target's xferk did not reload"; rc=1; }
	# The new instance opens a session: the old one is stale.
	th_start b probe "$TH_XFER" export /ctl/x/reload-probe.tok 4096
	th_wait_file "$TH_CTL/x/reload-probe.tok" 120 b || rc=1
	touch "$TH_CTL/x/reload.tok.killed"
else
	rc=1
fi
th_join a flood 120 || rc=1
th_join b target 10 >/dev/null
th_run b pkill -f "xfer export /ctl/x/reload-probe.tok"
th_join b probe 60 >/dev/null
th_start b target "$TH_XFER" export /ctl/x/reload-new.tok $((1 << 20))
th_run a "$TH_XFER" roundtrip /ctl/x/reload-new.tok $((1 << 20)) || rc=1
th_join b target 60 || rc=1
th_run a "$TH_XFER" stale /ctl/x/reload.tok || rc=1
exit $rc
