#!/usr/bin/env bash
# The two-VM harness, sourced by tests/vm/run: two guests "a" and "b" on
# the same kernel, joined by a virtual Ethernet link (qemu's dgram netdev
# on a UDP socket on 127.0.0.1 that tests/vm/link_socket.py makes; the
# guests' 10.98.0.1 and 10.98.0.2 exist only on that link), each with its
# own rdma_rxe on its virtio-net interface and its own xferk.ko.
#
# Control channel: a read-write 9p share (the host's $TH_CTL, /ctl in both
# guests). The guest agent (tests/vm/guest.sh, mode twohost) runs every
# script that appears in /ctl/NAME/cmd/ in the background and leaves its
# output and exit code in /ctl/NAME/out/. Programs in the two guests pass
# tokens through files in /ctl/x/.
#
# Test scripts (tests/twohost/*.sh) use:
#   th_boot NAME            start VM NAME and wait until its agent is ready
#                           (th_boot_start NAME, then th_boot_wait NAME)
#   th_run NAME CMD...      run CMD in NAME, print its output, return its rc
#   th_start NAME TAG CMD...    start CMD in NAME in the background
#   th_join NAME TAG [SECONDS]  wait for it: print output, return rc (124
#                           if it did not end in time or NAME went away)
#   th_kill NAME            kill NAME's qemu process (the host dies)
#   th_halt NAME            unload xferk, collect the kernel log, power off
#   th_alive NAME           NAME's qemu process runs
#   th_metric KEY VALUE     record a number for the closing report
#   th_stat VM NAME         a counter of VM's xferk (sysfs stats/NAME)
#   th_reload VM [PARAM=VALUE...]  unload xferk in VM, load it again with
#                           those module parameters
#   th_monitor NAME CMD     run a qemu monitor command in VM NAME
#   th_xferk_state          each VM's sessions, counters and messages
# Each boot of a VM is judged on its own: its kernel log must be clean.

TH_PORT=${XFERK_TWOHOST_PORT:-47310}
# The QOM path of a VM's virtio-net device (its -device id is "nic").
TH_NET_PATH=/machine/peripheral/nic/virtio-backend
# How long th_boot waits for a VM's agent to be ready, in seconds.
TH_BOOT_READY_S=180

th_addr() { [ "$1" = a ] && echo 10.98.0.1 || echo 10.98.0.2; }
th_other() { [ "$1" = a ] && echo b || echo a; }

# th_init DIR VMLINUZ: the run's directory and kernel.
th_init() {
	TH_DIR=$1 TH_VMLINUZ=$2
	TH_CTL=$TH_DIR/ctl
	rm -rf "$TH_CTL"
	mkdir -p "$TH_CTL/x"
	TH_SEQ=0
	# VMs an interrupted earlier run left behind.
	th_kill a
	th_kill b
	: >"$TH_DIR/boots"
	: >"$TH_DIR/metrics"
}

th_alive() {
	local pid
	pid=$(cat "$TH_DIR/$1.pid" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null
}

th_boot() {
	th_boot_start "$1" && th_boot_wait "$1"
}

# th_boot_start NAME: starts VM NAME's next boot (th_boot_wait waits for
# it), so that both VMs can boot at once.
th_boot_start() {
	local name=$1 n port_local port_remote mac dir
	th_alive "$name" && { log "VM $name is already running"; return 1; }
	n=$(grep -c "^$name " "$TH_DIR/boots" || true)
	n=$((n + 1))
	dir=$TH_DIR/$name.$n
	mkdir -p "$dir" "$TH_CTL/$name"/{cmd,run,out}
	rm -f "$TH_CTL/$name/ready" "$TH_CTL/$name/halt"
	echo "$name $n $dir" >>"$TH_DIR/boots"
	# The guest env names this VM, its address and its peer's.
	write_guest_env "$dir" "$TH_KERNEL" twohost "*" "$TH_MODDIR" "$TH_MODROOT" \
		"$TH_ABI" "XFERK_HOST=$name XFERK_BOOT=$n
XFERK_ADDR=$(th_addr "$name") XFERK_TEST_PEER=$(th_addr "$(th_other "$name")")
export XFERK_HOST XFERK_BOOT XFERK_ADDR XFERK_TEST_PEER"
	if [ "$name" = a ]; then
		port_local=$TH_PORT port_remote=$((TH_PORT + 1)) mac=52:54:00:98:00:01
	else
		port_local=$((TH_PORT + 1)) port_remote=$TH_PORT mac=52:54:00:98:00:02
	fi
	# One core each: the two guests share this machine's two. maxcpus=2
	# all the same: qemu 7.2's TCG drops a guest's memory barriers when
	# the machine can have one CPU only, and virtio then loses kicks (a
	# transmit ring the device never takes again; fixed upstream in 8.1,
	# "tcg: Do not elide memory barriers for !CF_PARALLEL in system
	# mode"). Started from a subshell, so that killing it is no job of
	# this shell.
	# The link's socket is made by link_socket.py (fd 3), with a buffer
	# that takes soft-RoCE's bursts.
	(python3 "$XFERK_SRC/tests/vm/link_socket.py" "$port_local" "$port_remote" \
		qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu "$VM_CPU_MODEL" -M q35 -m 2G -smp 1,maxcpus=2 \
		-display none -no-reboot \
		-monitor "unix:$TH_DIR/$name.monitor,server=on,wait=off" \
		-netdev dgram,id=link,local.type=fd,local.str=3 \
		-device "virtio-net-pci,id=nic,netdev=link,mac=$mac" \
		-kernel "$TH_VMLINUZ" -initrd "$TH_DIR/initramfs.cpio.gz" \
		-append "console=ttyS0 loglevel=5 panic=-1 kasan_multi_shot xferk_guest=$dir/guest.env" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$TH_CTL,mount_tag=ctl,security_model=none" \
		-serial "file:$dir/console.log" -serial "file:$dir/results.log" \
		</dev/null >"$dir/qemu.log" 2>&1 &
	echo $! >"$TH_DIR/$name.pid")
}

# th_boot_wait NAME: until VM NAME's boot is ready; 1 if it did not get so.
th_boot_wait() {
	local name=$1 n dir
	read -r _ n dir < <(grep "^$name " "$TH_DIR/boots" | tail -n1)
	th_wait_file "$TH_CTL/$name/ready" "$TH_BOOT_READY_S" "$name" ||
		{ log "VM $name (boot $n) did not get ready; console: $dir/console.log"; return 1; }
	log "VM $name (boot $n) ready: $(cat "$TH_CTL/$name/ready")"
}

# th_wait_file PATH SECONDS [VM]: until PATH exists (or VM died).
th_wait_file() {
	local path=$1 until=$(($(date +%s) + $2)) vm=${3:-}
	while [ ! -e "$path" ]; do
		[ "$(date +%s)" -ge "$until" ] && return 1
		[ -n "$vm" ] && ! th_alive "$vm" && return 1
		sleep 0.2
	done
}

th_start() {
	local name=$1 tag=$2 f
	shift 2
	f=$TH_CTL/$name/cmd/$tag
	rm -f "$TH_CTL/$name/out/$tag".*
	printf '%q ' "$@" >"$f.tmp"
	echo >>"$f.tmp"
	mv "$f.tmp" "$f.sh"
}

th_join() {
	local name=$1 tag=$2 secs=${3:-300} out=$TH_CTL/$1/out/$2 rc
	if th_wait_file "$out.rc" "$secs" "$name"; then
		rc=$(cat "$out.rc")
	else
		rc=124
		echo "[$name: '$tag' did not end within ${secs}s or the VM went away]"
	fi
	sed "s/^/[$name] /" "$out.log" 2>/dev/null
	# "metric KEY VALUE" lines of the programs go to the run's metrics.
	sed -n "s/^metric /$tag: /p" "$out.log" 2>/dev/null >>"$TH_DIR/metrics"
	return "$rc"
}

th_run() {
	local name=$1
	shift
	TH_SEQ=$((TH_SEQ + 1))
	th_start "$name" "run$TH_SEQ" "$@"
	th_join "$name" "run$TH_SEQ" "${TH_RUN_TIMEOUT:-300}"
}

# th_reload VM [PARAM=VALUE...]: unloads xferk in VM and loads it again
# with those module parameters; /dev/xferk goes to group xferk as at boot.
# rmmod is tried for up to 30 s: a killed process may hold the module a
# moment after pgrep stops seeing it (its file's release may wait for a
# session's teardown). A module that stays held (a leaked reference)
# fails; a retry is said in the test's output.
th_reload() {
	local vm=$1
	shift
	th_run "$vm" sh -c 'n=0
		until rmmod xferk 2>/dev/null; do
			n=$((n + 1))
			if [ $n -ge 150 ]; then
				rmmod xferk || exit 1
				break
			fi
			sleep 0.2
		done
		[ $n -eq 0 ] || echo "rmmod xferk: module in use, unloaded after $n retries"
		insmod "$XFERK_MODDIR/kmod/xferk.ko" "$@" && chgrp xferk /dev/xferk' reload "$@"
}

# A counter of VM $1: /sys/class/misc/xferk/stats/$2, the bare number.
th_stat() {
	th_run "$1" cat "/sys/class/misc/xferk/stats/$2" | sed 's/^\[.\] //'
}

th_kill() {
	local pid
	pid=$(cat "$TH_DIR/$1.pid" 2>/dev/null) || return 0
	kill -9 "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
	done
	rm -f "$TH_DIR/$1.pid"
}

th_halt() {
	local name=$1 pid until
	th_alive "$name" || return 0
	pid=$(cat "$TH_DIR/$name.pid")
	touch "$TH_CTL/$name/halt"
	until=$(($(date +%s) + 120))
	while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$until" ]; do
		sleep 0.5
	done
	th_kill "$name"
}

th_metric() { echo "$*" | tee -a "$TH_DIR/metrics"; }

# th_monitor NAME CMD: runs the qemu monitor command CMD in VM NAME and
# prints its answer.
th_monitor() { vm_monitor "$TH_DIR/$1.monitor" "$2"; }

# th_link_state: what each VM's virtio-net device knows of its receive
# (0) and transmit (1) queues, for the log of a failed test: a transmit
# queue whose avail index is ahead of the device's last one has packets
# the device does not take.
th_link_state() {
	local vm q avail used num
	for vm in a b; do
		th_alive "$vm" || continue
		for q in 0 1; do
			echo "[$vm] virtio-net queue $q:"
			th_monitor "$vm" "info virtio-queue-status $TH_NET_PATH $q" \
				>"$TH_DIR/queue" 2>&1
			sed "s/^/[$vm]   /" "$TH_DIR/queue"
			# The rings in guest memory: avail flags and index, used
			# flags and index, and the avail event (after the used ring).
			avail=$(awk '$1 == "avail:" { print $2 }' "$TH_DIR/queue")
			used=$(awk '$1 == "used:" { print $2 }' "$TH_DIR/queue")
			num=$(awk '$1 == "num:" { print $2 }' "$TH_DIR/queue")
			if [ -z "$avail" ] || [ -z "$used" ] || [ -z "$num" ]; then
				continue
			fi
			echo "[$vm]   avail flags, idx:"
			th_monitor "$vm" "xp /2hx $avail" | sed "s/^/[$vm]     /"
			echo "[$vm]   used flags, idx; avail event:"
			th_monitor "$vm" "xp /2hx $used" | sed "s/^/[$vm]     /"
			th_monitor "$vm" "xp /1hx $((used + 4 + 8 * num))" |
				sed "s/^/[$vm]     /"
		done
	done
}

# th_xferk_state: each VM's sessions (debugfs peers), its session
# counters and the kernel's last session messages, for the log of a
# failed test.
th_xferk_state() {
	local vm tag
	for vm in a b; do
		th_alive "$vm" || continue
		# A tag of its own (the test's subshell counted its runs) and
		# a short bound: a hung module must not hold the log back.
		tag=xferk-state-$SECONDS
		th_start "$vm" "$tag" sh -c '
			dmesg | grep "xferk: conn" | tail -n 40
			cd /sys/class/misc/xferk/stats &&
			grep -H . reconnect_attempts reconnects sessions_stale \
				qp_errors keepalive_failures path_deaths_*
			cat /sys/kernel/debug/xferk/peers' &&
			th_join "$vm" "$tag" 30 2>&1
	done
}

# The last value of metric KEY (as th_metric or a program recorded it).
th_metric_get() {
	sed -n "s/^\(.*: \)\{0,1\}$1 //p" "$TH_DIR/metrics" | tail -n1
}

# Datagrams this host dropped for a full socket receive buffer so far
# (RcvbufErrors of /proc/net/snmp): the link's, and any other program's.
th_udp_drops() {
	awk '$1 == "Udp:" && !col { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") col = i; next }
	     $1 == "Udp:" && col { print $col }' /proc/net/snmp
}

# Runs every tests/twohost/*.sh (matching GLOB) against fresh VMs, writes
# the guest-style report to $TH_DIR/results.log and judges each boot.
th_suite() {
	local glob=$1 t name rc t0 t_suite=$SECONDS drops
	drops=$(th_udp_drops)
	exec 4>"$TH_DIR/results.log"
	th_boot_start a && th_boot_start b && th_boot_wait a && th_boot_wait b ||
		{ th_kill a; th_kill b; }
	for t in "$XFERK_SRC"/tests/twohost/*.sh; do
		name=$(basename "$t" .sh)
		# shellcheck disable=SC2053
		[[ $name == $glob ]] || continue
		log "$name"
		t0=$SECONDS
		if th_alive a && th_alive b; then
			rc=0
			(source "$t") >"$TH_DIR/out" 2>&1 || rc=$?
			if [ "$rc" -ne 0 ]; then
				th_xferk_state >>"$TH_DIR/out" 2>&1 || true
				th_link_state >>"$TH_DIR/out" 2>&1 || true
			fi
		else
			echo "a VM is down before the test" >"$TH_DIR/out"
			rc=1
		fi
		echo "XFERK-BEGIN output $name" >&4
		cat "$TH_DIR/out" >&4
		echo "XFERK-END" >&4
		echo "XFERK-RESULT $name $rc" >&4
		th_metric "$name: took $((SECONDS - t0)) s" >/dev/null
		# What the test left running in the VMs goes. A failed test
		# may have left them in any state (a link that sends nothing):
		# the next test gets fresh VMs, so one failure stays one.
		if [ "$rc" -ne 0 ]; then
			th_halt a
			th_halt b
		fi
		th_alive a && th_run a pkill -9 -f "$TH_XFER" >/dev/null
		th_alive b && th_run b pkill -9 -f "$TH_XFER" >/dev/null
		# A test that left a VM down gets it back for the next one.
		th_alive a || th_boot a || true
		th_alive b || th_boot b || true
	done
	th_halt a
	th_halt b
	th_metric "two-VM suite: took $((SECONDS - t_suite)) s" >/dev/null
	th_metric "UDP datagrams the host dropped meanwhile (the link's, any other's): $(($(th_udp_drops) - drops))" >/dev/null
	echo "XFERK-DONE" >&4
	exec 4>&-
}

# Judges the suite and each VM boot: a boot that was killed on purpose
# need not finish, but its console must be clean. Lines are named
# twohost-KERNEL/TEST and twohost-KERNEL/VM.BOOT/CHECK.
th_judge() {
	local mode=$1 name n dir rc=0 finished label=twohost-$TH_KERNEL
	python3 "$XFERK_SRC/tests/vm/judge.py" --kernel "$label" --mode "$mode" \
		--results "$TH_DIR/results.log" --console /dev/null \
		--summary "$TH_DIR/summary.suite" || rc=1
	grep -v -e '/kernel/log-clean$' "$TH_DIR/summary.suite" >"$TH_DIR/summary"
	while read -r name n dir; do
		finished=$(grep -c '^XFERK-DONE' "$dir/results.log" 2>/dev/null || true)
		python3 "$XFERK_SRC/tests/vm/judge.py" --kernel "$label/$name.$n" \
			--mode "$mode" --results "$dir/results.log" \
			--console "$dir/console.log" --summary "$dir/summary" >"$dir/judge.log" || true
		# Killed boots do not finish; their console still has to be clean.
		if [ "$finished" -eq 0 ]; then
			sed -i '/vm\/finished$/d' "$dir/summary"
		fi
		grep -v "^SKIP" "$dir/summary" | sed 's/^/  /' >&2
		grep '^FAIL' "$dir/summary" >/dev/null && { rc=1; cat "$dir/judge.log"; }
		cat "$dir/summary" >>"$TH_DIR/summary"
	done <"$TH_DIR/boots"
	if [ -s "$TH_DIR/metrics" ]; then
		echo "two-host metrics:"
		sed 's/^/  /' "$TH_DIR/metrics"
	fi
	return $rc
}

# The programs the tests run in the VMs.
TH_XFER=$XFERK_BUILD/tests/twohost/xfer

# make demo: a decode VM exports, a prefill VM writes 64 MiB into it, both
# verify; then ib_write_bw between the same two VMs.
th_demo() {
	exec 4>"$TH_DIR/results.log"
	th_boot a && th_boot b || { th_kill a; th_kill b; return 1; }
	{
		th_run a "$XFERK_BUILD/bin/xferk" status
		echo
		echo "decode VM (b, 10.98.0.2) exports 64 MiB; prefill VM (a, 10.98.0.1) writes it over RDMA:"
		th_start b decode "$TH_XFER" export /ctl/x/demo.tok $((64 << 20))
		rc=0
		TH_RUN_TIMEOUT=600 th_run a "$TH_XFER" bw /ctl/x/demo.tok $((64 << 20)) 1 || rc=1
		th_join b decode 120 || rc=1
		echo "XFERK-RESULT demo/transfer $rc" >&4
		echo
		echo "ib_write_bw from a to b, 1 MiB messages:"
		th_ib_write_bw
		awk -v a="$(th_metric_get xferk_write_mbs)" -v b="$(th_metric_get ib_write_bw_mbs)" \
			'BEGIN { if (a > 0 && b > 0) printf "xferk / ib_write_bw = %.2f\n", a / b }'
		echo
		echo "counters of the prefill VM (a):"
		th_run a sh -c 'grep . /sys/class/misc/xferk/stats/* | sed "s|.*/stats/||"'
		echo
		echo "connections of the prefill VM (debugfs xferk/peers):"
		th_run a cat /sys/kernel/debug/xferk/peers
	} 2>&1 | tee "$TH_DIR/demo.log"
	th_halt a
	th_halt b
	echo "XFERK-DONE" >&4
	exec 4>&-
}

# ib_write_bw from a to b over the same link (1 MiB messages, COUNT of
# them): prints its MB/s and records it as a metric; 1, with both ends'
# output, if it gave no number.
th_ib_write_bw() {
	local count=${1:-100} mbs out
	th_start b ibsrv ib_write_bw -d rxe0 -x 1 -s 1048576 -n "$count" -p 18601
	th_run b sh -c 'for i in $(seq 300); do
		ss -ltn | grep -q ":18601 " && exit 0
		sleep 0.1
	done; echo "ib_write_bw does not listen"; exit 1' || return 1
	out=$(th_run a ib_write_bw -d rxe0 -x 1 -s 1048576 -n "$count" -p 18601 10.98.0.2 2>&1)
	mbs=$(awk '$2 == 1048576 { print $5 }' <<<"$out")
	if [ -n "$mbs" ]; then
		th_join b ibsrv 60 >/dev/null
		echo "ib_write_bw: $mbs MB/s"
		th_metric ib_write_bw_mbs "$mbs"
		return 0
	fi
	echo "ib_write_bw gave no number; its client, then its server:"
	echo "$out"
	th_run b pkill -9 -x ib_write_bw >/dev/null
	th_join b ibsrv 60
	return 1
}
