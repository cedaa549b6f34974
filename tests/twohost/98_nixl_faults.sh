# Faults under the vLLM-shaped NIXL workload (tests/nixl/vllm_faults.py),
# XFERK: host a's agent (the target) dies (SIGKILL) under four READs and a
# new one is started; then a's link goes down for 8 s under four WRITEs,
# past the QPs' retry window: b's path dies and is replaced. Every request
# ends, each notification is delivered once after its data or its
# transfer fails, and no call takes longer than its bound.
TH_NIXL=$XFERK_SRC/tests/nixl/twohost.sh
faults_dir=$TH_CTL/x/vllm_faults-XFERK
rc=0
th_start a target1 "$TH_NIXL" vllm_faults target XFERK 1
th_start b initiator "$TH_NIXL" vllm_faults initiator XFERK
# The first target kills itself (SIGKILL) once the initiator's READs are
# posted: its exit status says only that.
th_join a target1 240 >/dev/null
th_start a target2 "$TH_NIXL" vllm_faults target XFERK 2
if th_wait_file "$faults_dir/posted.2" 180 b; then
	th_run a sh -c "ip link set eth0 down && sleep 8 && ip link set eth0 up" || rc=1
else
	echo "the initiator did not post its WRITEs"
	rc=1
fi
th_join b initiator 420 || rc=1
th_join a target2 60 || rc=1
exit $rc
