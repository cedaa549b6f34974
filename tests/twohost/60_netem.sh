# 1 % packet loss and 5 ms delay each way (tc netem on both VMs): an 8 MiB
# WRITE through xferk, verified by the target, and ib_write_bw over the same
# link; both throughputs and their ratio are reported. The test is
# xferk's transfer: an ib_write_bw that gives no number (perftest refuses
# to report when its cycle counter does not track the clock, as a loaded
# TCG guest's does not; its output is shown) leaves the ratio out.
rc=0
for v in a b; do
	th_run $v tc qdisc add dev eth0 root netem loss 1% delay 5ms || exit 1
done
th_start b target "$TH_XFER" export /ctl/x/netem.tok $((8 << 20))
out=$(th_run a "$TH_XFER" bw /ctl/x/netem.tok $((8 << 20)) 1) || rc=1
echo "$out"
th_join b target 120 || rc=1
th_ib_write_bw 16 || echo "no ib_write_bw number under netem: no ratio"
for v in a b; do
	th_run $v tc qdisc del dev eth0 root || rc=1
done
# This test's own numbers: earlier tests record xferk_write_mbs too.
x=$(sed -n 's/^\[a\] metric xferk_write_mbs //p' <<<"$out")
p=$(th_metric_get ib_write_bw_mbs)
[ -n "$x" ] || { echo "no xferk throughput"; exit 1; }
if [ -n "$p" ]; then
	th_metric netem_xferk_over_ib_write_bw "$(echo "scale=2; $x / $p" | bc)"
fi
exit $rc
