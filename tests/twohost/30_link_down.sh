# The target's link goes down for 1 s, 5 s and 30 s; the initiator posts
# 200 WRITE ops (deadline 20 s, drain 5 s) just after it went down. A 1 s outage is
# within the QPs' retry window (7 tries of 0.54 s): every op succeeds and
# the target verifies the data. Longer outages exhaust the retries: every
# op still settles by its deadline plus its drain budget, nothing hangs,
# the counters go back; the target's end, which posted nothing, finds out
# by its keepalive (keepalive_ms 2000 plus the retry window) and goes
# down, so once the link is up a new connection and transfer work.
rc=0
outage() {
	local secs=$1 verify=$2 tok=/ctl/x/link$1.tok
	echo "--- link down for $secs s"
	th_start b target "$TH_XFER" export "$tok" $((200 * 65536))
	th_start a flood env XFERK_FLOOD_VERIFY="$verify" XFERK_FLOOD_GATE="$tok.down" \
		"$TH_XFER" flood "$tok" 200 65536 20000 5000
	th_wait_file "$TH_CTL/x/link$secs.tok.ready" 180 a || return 1
	th_run b sh -c "ip link set eth0 down && touch $tok.down && sleep $secs &&
		ip link set eth0 up" || return 1
	th_join a flood 120 || return 1
	if [ "$verify" = 1 ]; then
		th_join b target 60 || return 1
	else
		th_run b pkill -f "xfer export $tok"
		th_join b target 60 >/dev/null
		# The target's end of the dead connection goes by itself.
		th_run b sh -c 'for i in $(seq 100); do
			[ "$(cat /sys/class/misc/xferk/stats/peers_connected)" = 0 ] && exit 0
			sleep 0.1
		done; echo "the dead connection is still up"; exit 1' || return 1
		th_run b cat /sys/class/misc/xferk/stats/keepalive_failures
	fi
	# Afterwards, a new transfer between the two hosts.
	th_start b target "$TH_XFER" export "$tok.after" $((1 << 20))
	th_run a "$TH_XFER" bw "$tok.after" $((1 << 20)) 1 || return 1
	th_join b target 60
}
outage 1 1 || rc=1
outage 5 0 || rc=1
outage 30 0 || rc=1
exit $rc
