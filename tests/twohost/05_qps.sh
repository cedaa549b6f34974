# A session of 4 QPs per path between two hosts, first in the suite (on
# fresh VMs). Both modules are loaded again, host b's with qps_per_session
# 4; b opens the session (its export connects to a), and a imports over it
# and runs the round trip (1 B to 16 MiB, WRITE and READ, ioctl and
# io_uring, data verified on both sides; 10_cross_host goes to 64 MiB).
# Then the session has 4 QPs on both ends, every one taking work requests
# (debugfs peers), and every one of the QPs of host a, which posted the
# work requests, took some. At the end both modules are loaded again as
# they were: the other tests run over sessions of one QP.
# reload VM [PARAM=VALUE...]: ends the VM's xfer programs, then
# th_reload.
reload() {
	th_run "$1" sh -c 'pkill -9 -f "[x]fer "
		while pgrep -f "[x]fer " >/dev/null; do sleep 0.1; done' &&
		th_reload "$@"
}
# One up RDMA session, 4 QPs all taking work requests; with "posted",
# each QP has posted some.
lanes='awk -v posted="$1" "NR > 1 && \$2 == \"rdma\" && \$4 == \"up\" {
		n++; if (\$19 != 4 || \$20 != 4) bad = 1
		k = split(\$21, p, \",\"); if (k != 4) bad = 1
		for (i = 1; i <= k; i++) if (posted && p[i] == 0) bad = 1
	} END { exit n != 1 || bad }" /sys/kernel/debug/xferk/peers; rc=$?
	cat /sys/kernel/debug/xferk/peers; exit $rc'
rc=0
reload a || { echo "a: xferk did not reload"; rc=1; }
reload b qps_per_session=4 || { echo "b: xferk did not reload"; rc=1; }
th_start b target "$TH_XFER" export /ctl/x/qps.tok $((16 << 20))
th_run a "$TH_XFER" roundtrip /ctl/x/qps.tok $((16 << 20)) || rc=1
th_join b target 120 || rc=1
th_run b sh -c "$lanes" lanes "" || { echo "b: not 4 QPs up"; rc=1; }
th_run a sh -c "$lanes" lanes posted ||
	{ echo "a: not 4 QPs up, each with work requests posted"; rc=1; }
for v in a b; do
	reload $v || { echo "$v: xferk did not reload"; rc=1; }
done
exit $rc
