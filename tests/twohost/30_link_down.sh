# The target's link goes down for 1 s, 5 s and 30 s; the initiator posts
# 200 WRITE ops (deadline 20 s, drain 5 s) just after it went down.
# A 1 s outage is within the QPs' retry window (7 tries of 0.54 s). A 5 s
# outage exhausts the retries and kills the path; the session reconnects
# once the link is back and posts the flushed work requests again. Both
# cost latency only: every op succeeds and the target verifies the data.
# A 30 s outage outlasts the ops' deadlines: every op still settles by its
# deadline plus its drain budget, nothing hangs, the counters go back.
# The target's end (it opened the session, and posts nothing) learns that
# the path died from its keepalive once the link is back, and reconnects:
# after 5 s the initiator's end takes the new path; after 30 s it has given
# up (reconnect_ms) and refuses the session as stale. Once the target has
# done either, a new export and transfer work (on the same session, or a
# new one).
rc=0
outage() {
	local secs=$1 verify=$2 tok=/ctl/x/link$1.tok
	local reconnects reposted b_resolved
	echo "--- link down for $secs s"
	reconnects=$(th_stat a reconnects)
	reposted=$(th_stat a chunks_reposted)
	b_resolved=$(($(th_stat b reconnects) + $(th_stat b sessions_stale)))
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
	fi
	if [ "$secs" -gt 1 ]; then
		th_run b sh -c "for i in \$(seq 600); do
			[ \$((\$(cat /sys/class/misc/xferk/stats/reconnects) +
			      \$(cat /sys/class/misc/xferk/stats/sessions_stale))) -gt $b_resolved ] && exit 0
			sleep 0.1
		done; echo 'the target never noticed the dead path'; exit 1" || return 1
		th_metric "link_down_${secs}s_target_reconnects_total $(th_stat b reconnects)"
		th_metric "link_down_${secs}s_target_sessions_stale_total $(th_stat b sessions_stale)"
	fi
	th_metric "link_down_${secs}s_reconnects $(($(th_stat a reconnects) - reconnects))"
	th_metric "link_down_${secs}s_chunks_reposted $(($(th_stat a chunks_reposted) - reposted))"
	# Afterwards, a new transfer between the two hosts.
	th_start b target "$TH_XFER" export "$tok.after" $((1 << 20))
	th_run a "$TH_XFER" bw "$tok.after" $((1 << 20)) 1 || return 1
	th_join b target 60
}
outage 1 1 || rc=1
outage 5 1 || rc=1
outage 30 0 || rc=1
exit $rc
