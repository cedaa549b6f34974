#!/bin/bash
# Runs inside the test VM, in the shared host root (see tests/vm/init).
# Reports on the second serial port (/dev/ttyS1), one record per line:
#   XFERK-RESULT NAME RC           a test and its exit code (0, 1, 77)
#   XFERK-BEGIN KIND NAME ... XFERK-END   a block (output, kunit, kmemleak, dmesg)
#   XFERK-DONE                     the guest finished
# tests/vm/judge.py reads it on the host.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec 3>/dev/ttyS1
cd /

TESTS=$XFERK_BUILD/tests/integration
TEST_TIMEOUT=${XFERK_TEST_TIMEOUT:-600}
DEBUGFS=/sys/kernel/debug

result() { echo "XFERK-RESULT $1 $2" >&3; }
block() {
	echo "XFERK-BEGIN $1 $2" >&3
	cat >&3
	echo "XFERK-END" >&3
}

# The stacks of tasks in D state and of test NAME's processes, to the console.
dump_blocked() {
	local p state comm
	for p in /proc/[0-9]*; do
		state=$(awk '{ print $3 }' "$p/stat" 2>/dev/null)
		comm=$(cat "$p/comm" 2>/dev/null)
		[ "$state" = D ] || [ "$comm" = "$(basename "$1")" ] || continue
		echo "blocked: ${p#/proc/} $comm state $state"
		cat "$p/stack" 2>/dev/null
	done >/dev/ttyS0
}

# Runs a command as test NAME; its output goes into an output block.
run_test() {
	local name=$1 rc up idle
	shift
	# Uptime and the idle time of all vCPUs together, for "slowest".
	read -r up idle </proc/uptime
	echo "== $name (at $up s, idle $idle s)" >/dev/ttyS0
	if declare -F "$1" >/dev/null; then
		"$@" >/tmp/out 2>&1
		rc=$?
	else
		# Shortly before the timeout, log the stacks of blocked tasks.
		(sleep $((TEST_TIMEOUT - 5)) && dump_blocked "$name") &
		timeout -k 5 "$TEST_TIMEOUT" "$@" >/tmp/out 2>&1
		rc=$?
		kill $! 2>/dev/null
	fi
	block output "$name" </tmp/out
	result "$name" "$rc"
	return $rc
}

load_kmod() {
	# The debug kernel has everything built in.
	[ -n "$XFERK_MODROOT" ] || return 0
	modprobe -d "$XFERK_MODROOT" -S "$XFERK_ABI" "$1"
}

setup_rdma() {
	local m
	# crc32_generic must precede rdma_rxe; rdma_ucm serves userspace rdma_cm;
	# vgem makes the dma-bufs of tests/integration/dmabuf.c.
	for m in crc32_generic rdma_rxe rdma_cm ib_uverbs rdma_ucm dummy vgem; do
		load_kmod "$m" || return 1
	done
	ip link set lo up
	ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy || return 1
	# .1 is the host; .2 a second address of it, for a second connection.
	ip addr add 10.99.0.1/24 dev dummy0 && ip addr add 10.99.0.2/24 dev dummy0 &&
		ip link set dummy0 up &&
		rdma link add rxe0 type rxe netdev dummy0 && rdma link show rxe0/1
}

# Two-VM mode: this VM's rxe0 on the virtio-net link to the other VM.
setup_link() {
	local m
	# qemu 7.2's TCG keeps the guest's memory barriers only on a machine
	# that can have more than one CPU, and virtio needs them (th_boot).
	if [ "$(cat /sys/devices/system/cpu/possible)" = 0 ]; then
		echo "one possible CPU: qemu drops this guest's memory barriers"
		return 1
	fi
	for m in crc32_generic rdma_rxe rdma_cm ib_uverbs rdma_ucm virtio_net sch_netem \
		vgem; do
		load_kmod "$m" || return 1
	done
	ip link set lo up
	ip addr add "$XFERK_ADDR/24" dev eth0 && ip link set eth0 up &&
		rdma link add rxe0 type rxe netdev eth0 && rdma link show rxe0/1
}

# Two-VM mode (tests/vm/twohost.sh): runs each script the host drops into
# /ctl/NAME/cmd/ in the background, output and exit code to /ctl/NAME/out/,
# until the host asks this VM to halt.
agent() {
	local me=/ctl/$XFERK_HOST f id
	mkdir -p /ctl
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 ctl /ctl || return 1
	echo "boot $XFERK_BOOT, kernel $(uname -r), $XFERK_ADDR" >"$me/ready"
	while [ ! -e "$me/halt" ]; do
		for f in "$me"/cmd/*.sh; do
			[ -e "$f" ] || continue
			id=$(basename "$f" .sh)
			mv "$f" "$me/run/$id.sh" || continue
			(
				cd /tmp && bash "$me/run/$id.sh" >"$me/out/$id.log" 2>&1
				echo $? >"$me/out/$id.rc.tmp"
				mv "$me/out/$id.rc.tmp" "$me/out/$id.rc"
			) &
		done
		sleep 0.1
	done
	# What a test left running (a target waiting for a peer that died).
	pkill -9 -f "$XFERK_BUILD/tests/twohost/"
	wait
}

kmemleak() {
	local start
	[ -e $DEBUGFS/kmemleak ] || return 0
	start=$(cut -d' ' -f1 /proc/uptime)
	echo scan >$DEBUGFS/kmemleak
	if [ "$1" = clear ]; then
		# Only the scans after the module's unload judge: the periodic
		# one (every 600 s, about 10 s of the debug VM's CPU each) could
		# only add a report of an object still in use at that moment.
		echo scan=off >$DEBUGFS/kmemleak
		echo clear >$DEBUGFS/kmemleak
	else
		# The second scan starts 6 s after the first did, past
		# kmemleak's minimum age (5 s) for what was allocated before
		# it: only what is left of the 6 s, since a scan of the debug
		# kernel takes about 10 s itself.
		sleep "$(awk -v s="$start" '{ d = s + 6 - $1; print (d > 0 ? d : 0) }' /proc/uptime)"
		echo scan >$DEBUGFS/kmemleak
		block kmemleak after-unload <$DEBUGFS/kmemleak
	fi
}

run_kunit() {
	local suite
	run_test kunit/load insmod "$XFERK_MODDIR/tests/kunit/xferk_test.ko" || return
	for suite in $DEBUGFS/kunit/xferk_*; do
		block kunit "$(basename "$suite")" <"$suite/results"
	done
	run_test kunit/unload rmmod xferk_test
}

# The integration programs, and the example programs (which check their work).
run_integration() {
	local t name
	for t in "$TESTS"/* "$XFERK_BUILD"/examples/*; do
		name=$(basename "$t")
		# shellcheck disable=SC2053
		[[ $name == $XFERK_ONLY ]] || continue
		[[ $t == */examples/* ]] && name=example/$name
		run_test "$name" "$t"
	done
}

# xferk-bench kernel's modules: null_blk's nullb0 for nvmet-rdma to export,
# nvme-rdma to connect to it over rxe0.
setup_nvme() {
	local m
	for m in null_blk nvmet_rdma nvme_rdma; do
		load_kmod "$m" || return 1
	done
	# configfs is a module of the stock kernel: nvmet loads it.
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config
}

# make bench: each benchmark whose name matches XFERK_ONLY.
bench() {
	local name
	for name in ctrl qos bw moderation kernel nixl; do
		# shellcheck disable=SC2053
		[[ $name == $XFERK_ONLY ]] || continue
		case $name in
		nixl) run_test bench/nixl "$XFERK_SRC/tests/nixl/bench.sh" ;;
		kernel)
			run_test setup/nvme setup_nvme
			run_test bench/kernel "$XFERK_BUILD/bin/xferk-bench" kernel
			;;
		# Its three passes take about 11 min: twice a test's time,
		# for this call only.
		bw) TEST_TIMEOUT=$((TEST_TIMEOUT * 2)) \
			run_test bench/bw "$XFERK_BUILD/bin/xferk-bench" bw ;;
		*) run_test "bench/$name" "$XFERK_BUILD/bin/xferk-bench" "$name" ;;
		esac
	done
}

# make fuzz: the uAPI fuzzer for XFERK_FUZZ_SECONDS (make check runs it briefly).
fuzz() {
	TEST_TIMEOUT=$((XFERK_FUZZ_SECONDS + 300))
	run_test fuzz/long "$TESTS/fuzz_uapi" -t "$XFERK_FUZZ_SECONDS" -n 1000000000
}

main() {
	echo "guest: kernel $(uname -r), mode $XFERK_MODE" >/dev/ttyS0
	# Memory cgroups, for the tests of what a user's kernel memory is charged to.
	mountpoint -q /sys/fs/cgroup ||
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || true
	if [ "$XFERK_MODE" = twohost ]; then
		run_test setup/link setup_link
	else
		run_test setup/rdma setup_rdma
	fi
	kmemleak clear
	run_test module/load insmod "$XFERK_MODDIR/kmod/xferk.ko"
	# The kernel's and the modules' symbols, for a host that must name
	# the instruction pointers of a stuck guest (tests/vm/symbolize.py).
	mkdir -p /run/share
	mount -t 9p -o trans=virtio,version=9p2000.L share /run/share 2>/dev/null &&
		cp /proc/kallsyms /run/share/kallsyms
	if [ -e /dev/xferk ]; then
		# What tools/60-xferk.rules makes udev do on a real host.
		getent group xferk >/dev/null || groupadd --system xferk
		chgrp xferk /dev/xferk
		if [ "$XFERK_MODE" = twohost ]; then
			run_test agent agent
		elif [ "$XFERK_MODE" = bench ]; then
			bench
		elif [ "$XFERK_MODE" = fuzz ]; then
			fuzz
		elif [ "$XFERK_MODE" = repro ]; then
			run_test repro/rxe_cq_tasklet insmod "$XFERK_MODDIR/repro/rxe_cq_tasklet.ko"
		else
			[ -e "$XFERK_MODDIR/tests/kunit/xferk_test.ko" ] && run_kunit
			run_integration
			# shellcheck disable=SC2053
			if [[ xferk-bench == $XFERK_ONLY ]]; then
				run_test bench/ctrl-quick "$XFERK_BUILD/bin/xferk-bench" ctrl --quick
				# RDMA ~28 times slower on the debug kernel: stock only.
				if [ "$XFERK_KERNEL" != debug ]; then
					run_test bench/qos-quick "$XFERK_BUILD/bin/xferk-bench" qos --quick
					run_test bench/bw-quick "$XFERK_BUILD/bin/xferk-bench" bw --quick
					run_test bench/moderation-quick \
						"$XFERK_BUILD/bin/xferk-bench" moderation --quick
					run_test setup/nvme setup_nvme &&
						run_test bench/kernel-quick \
							"$XFERK_BUILD/bin/xferk-bench" kernel --quick
				fi
			fi
		fi
		run_test module/unload rmmod xferk
		# The device goes last: the kernel frees its pooled CQs and
		# warns if a user did not give back every entry it claimed.
		run_test module/device-release rdma link delete rxe0
	fi
	kmemleak scan
	dmesg --color=never | block dmesg kernel
	echo "XFERK-DONE" >&3
}

main
