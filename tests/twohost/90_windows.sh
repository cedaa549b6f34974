# The seeds' target-side experiment across two hosts: decode (host a) opens
# a window per request over scattered pages of its pool, prefill (host b)
# writes into every window it holds; decode aborts each request at a random
# moment, closes the window and at once fills its pages with a canary; no
# canary may change. Cooperative (b's kernel answers every revoke), killed
# (b kills and restarts its writer every 50 requests) and forced (b's
# kernel never answers: closes forced, late writes fail at a's device).
TH_WA=$XFERK_BUILD/tests/integration/window_abort
rc=0
for mode in cooperative:500 killed:500 forced:50; do
	m=${mode%:*}
	th_start b prefill "$TH_WA" prefill "/ctl/x/w-$m" "$m"
	th_run a "$TH_WA" decode "/ctl/x/w-$m" "$m" "${mode#*:}" || rc=1
	th_join b prefill 60 || rc=1
done
exit $rc
