# The target VM dies (its qemu process is killed) with 1000 WRITE ops in
# flight from the initiator: every op settles by its deadline plus its
# drain budget, no snapshot says buffer_reusable before the op is
# physically complete, a new op on the dead connection fails, the
# initiator's counters go back to where they were and xferk unloads
# cleanly. When the target boots again, a new connection, export and
# token work; the old instance's token is refused.
rc=0
th_start b target "$TH_XFER" export /ctl/x/kill.tok $((64 << 20))
th_start a flood "$TH_XFER" flood /ctl/x/kill.tok 1000 65536 20000 5000
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
th_join a flood 120 || rc=1
th_metric peer_killed_flood_wall_s "$(echo "$(date +%s.%N) - $t_kill" | bc)"
th_run a sh -c 'rmmod xferk && insmod "$XFERK_MODDIR/kmod/xferk.ko" &&
	chgrp xferk /dev/xferk' || { echo "xferk did not unload cleanly"; rc=1; }

t_boot=$(date +%s.%N)
th_boot b || exit 1
th_start b target "$TH_XFER" export /ctl/x/kill-new.tok $((1 << 20))
th_run a "$TH_XFER" roundtrip /ctl/x/kill-new.tok $((1 << 20)) || rc=1
th_join b target 60 || rc=1
th_metric peer_back_to_transfer_s "$(echo "$(date +%s.%N) - $t_boot" | bc)"
th_run a "$TH_XFER" stale /ctl/x/kill.tok || rc=1
exit $rc
