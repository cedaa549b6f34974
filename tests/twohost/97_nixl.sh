# vLLM-shaped NIXL traffic between the hosts (tests/nixl/vllm_shape.py):
# host a is the prefill side (the target), host b the decode side (the
# initiator): requests of 8,192 descriptors, READ and WRITE with
# notifications, every byte checked, aborts whose blocks are reused at
# once, and target aborts (the target lets go of the initiator and reuses
# a request's blocks while its WRITE is in flight). XFERK must pass, and
# so must XFERK-request (every engine fenced per request: windows over
# each request's blocks). With XFERK_NIXL_UCX=1 (make bench), UCX runs the
# same over the same rxe link and its numbers are printed beside them, not
# judged.
TH_NIXL=$XFERK_SRC/tests/nixl/twohost.sh
rc=0
backends=(XFERK XFERK-request)
[ "${XFERK_NIXL_UCX:-0}" = 1 ] && backends+=(UCX)
for backend in "${backends[@]}"; do
	echo "== $backend"
	th_start a "target-$backend" "$TH_NIXL" vllm_shape target "$backend"
	out=$(th_run b "$TH_NIXL" vllm_shape initiator "$backend")
	r=$?
	echo "$out"
	# The initiator's numbers, for the suite's metrics.
	ini=$(sed -n 's/^\[b\] \({"side": "initiator".*\)/\1/p' <<<"$out")
	[ -n "$ini" ] && jq -r --arg b "$backend" '
		"nixl \($b): READ \(.read_s) s, WRITE \(.write_s) s (\(.requests) x " +
		"\(.descriptors_per_request) descriptors); aborts in flight " +
		"\(.aborts.in_flight)/\(.aborts.iterations), corrupted bytes " +
		"\(.aborts.corrupted_bytes)"' <<<"$ini" | while read -r m; do th_metric "$m" >/dev/null; done
	tout=$(th_join a "target-$backend" 150) || { [ "$r" -eq 0 ] && r=1; }
	echo "$tout"
	# The target's: the bytes its target aborts saw changed.
	sed -n 's/^\[a\] \({"side": "target".*\)/\1/p' <<<"$tout" |
		jq -r --arg b "$backend" --argjson i "${ini:-null}" '
		"nixl \($b): target aborts in flight \($i.target_aborts.in_flight // "?")/" +
		"\(.target_aborts.iterations), corrupted bytes " +
		"\(.target_aborts.corrupted_bytes), longest remove_remote_agent " +
		"\(.target_aborts.longest_remove_s) s"' |
		while read -r m; do th_metric "$m" >/dev/null; done
	[ "$r" -eq 77 ] && exit 77
	if [ "$backend" != UCX ]; then
		[ "$r" -eq 0 ] || rc=1
	else
		echo "UCX: exit $r (reported, not judged)"
	fi
	# A side that outlived its bound goes before the next one starts.
	th_run a pkill -9 -f vllm_shape.py >/dev/null
	th_run b pkill -9 -f vllm_shape.py >/dev/null
done
exit $rc
