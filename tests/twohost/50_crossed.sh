# Both hosts connect to each other at the same moment (a fresh xferk on
# each, so neither has a connection yet), 5 rounds: each time both end
# with exactly one session, which carries an export and a READ each way.
# stats/conns_crossed counts the requests refused because they crossed
# (the end with the greater id wins).
rc=0
crossed=0
for round in 1 2 3 4 5; do
	for vm in a b; do
		th_reload $vm || rc=1
	done
	dir=/ctl/x/cross$round
	th_start a cross "$TH_XFER" cross $dir
	th_start b cross "$TH_XFER" cross $dir
	sleep 1
	touch "$TH_CTL/x/cross$round.go"
	th_join a cross 120 || rc=1
	th_join b cross 120 || rc=1
	crossed=$((crossed + $(th_stat a conns_crossed) + $(th_stat b conns_crossed)))
done
th_metric "crossed_connect_rounds 5"
th_metric "crossed_connects_refused $crossed"
exit $rc
