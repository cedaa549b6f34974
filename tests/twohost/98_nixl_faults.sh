# Faults under the vLLM-shaped NIXL workload (tests/nixl/vllm_faults.py),
# XFERK: host a's agent (the target) dies (SIGKILL) under four READs and a
# new one is started; then a's link goes down for 8 s under four WRITEs,
# past the QPs' retry window: b's path dies and is replaced. Every request
# ends, each notification is delivered once after its data or its
# transfer fails, and no call takes longer than its bound. All of it
# twice: with XFERK's default fence and with every engine fenced per
# request (XFERK-request: windows over each request's blocks).
TH_NIXL=$XFERK_SRC/tests/nixl/twohost.sh
rc=0
for variant in XFERK XFERK-request; do
	echo "== $variant"
	faults_dir=$TH_CTL/x/vllm_faults-$variant
	th_start a "target1-$variant" "$TH_NIXL" vllm_faults target "$variant" 1
	th_start b "initiator-$variant" "$TH_NIXL" vllm_faults initiator "$variant"
	# The first target kills itself (SIGKILL) once the initiator's READs
	# are posted: its exit status says only that.
	th_join a "target1-$variant" 240 >/dev/null
	th_start a "target2-$variant" "$TH_NIXL" vllm_faults target "$variant" 2
	if th_wait_file "$faults_dir/posted.2" 180 b; then
		th_run a sh -c "ip link set eth0 down && sleep 8 && ip link set eth0 up" || rc=1
	else
		echo "the initiator did not post its WRITEs"
		rc=1
	fi
	th_join b "initiator-$variant" 420 || rc=1
	th_join a "target2-$variant" 60 || rc=1
done
exit $rc
