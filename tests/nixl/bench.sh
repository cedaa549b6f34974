#!/bin/bash
# make bench: nixlbench (NIXL's benchmark) with the XFERK backend next to
# UCX over the same rxe device, in one VM run: bandwidth and latency per
# block size, WRITE and READ. nixlbench runs as two instances (initiator
# and target) joined by its ASIO runtime on this host. Then the nixl_abort
# test's experiment (tests/nixl/abort_reuse.py) with both backends: what a
# late access did to buffers reused right after an abort.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
out=/tmp/nixlbench
mkdir -p "$out"
port=12345
# Busy CPU seconds of the whole machine so far (user, nice, system, irq,
# softirq of /proc/stat).
cpu_busy() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8) / hz; exit }' /proc/stat
}

# One nixlbench pair (initiator, target) with ARGS; the initiator's output
# in LOG, the target's in LOG.target. Its exit status.
nixlbench_pair() {
	local log=$1 rc
	shift
	port=$((port + 1))
	# The first instance listens and is rank 0, the initiator, which
	# prints the results; the second connects and is the target.
	timeout 300 "$NIXLBENCH" --runtime_type ASIO --asio_address 127.0.0.1 \
		--asio_port $port "$@" >"$log" 2>&1 &
	sleep 1
	timeout 300 "$NIXLBENCH" --runtime_type ASIO --asio_address 127.0.0.1 \
		--asio_port $port "$@" >"$log.target" 2>&1
	rc=$?
	wait $! || rc=$?
	return $rc
}

for backend in XFERK UCX; do
	for op in WRITE READ; do
		nixlbench_pair "$out/$backend-$op.log" --backend "$backend" \
			--op_type "$op" --start_block_size 4096 \
			--max_block_size $((1 << 20)) --total_buffer_size $((64 << 20)) \
			--num_iter 64 --warmup_iter 8 --large_blk_iter_ftr 4
		rc=$?
		if [ $rc -ne 0 ] && [ $backend = XFERK ]; then
			echo "nixlbench $backend $op failed (exit $rc):"
			cat "$out/$backend-$op.log" "$out/$backend-$op.target"
			exit 1
		fi
		# The other backend's failure is reported, not judged.
		[ $rc -eq 0 ] || { echo "nixlbench $backend $op: exit $rc; its last lines:";
			tail -n 5 "$out/$backend-$op.log" "$out/$backend-$op.target"; }
		echo "== nixlbench --backend $backend --op_type $op"
		grep -E '^(Block|[0-9]+ )|rror' "$out/$backend-$op.log"
	done
done
# The table: nixlbench's rows (block size, batch, GB/s, average latency in
# us, ...) of both backends side by side, and as JSON.
/usr/bin/python3 - "$out" <<'EOT'
import json, sys
rows = {}
for backend in ("XFERK", "UCX"):
    for op in ("WRITE", "READ"):
        for line in open(f"{sys.argv[1]}/{backend}-{op}.log"):
            f = line.split()
            if len(f) >= 4 and f[0].isdigit() and f[1].isdigit():
                rows.setdefault((op, int(f[0])), {})[backend] = (float(f[2]), float(f[3]))
print(f"{'op':5} {'block':>8} {'XFERK MB/s':>11} {'UCX MB/s':>9} {'ratio':>6}"
      f" {'XFERK lat us':>13} {'UCX lat us':>11}")
out = []
for (op, size), r in sorted(rows.items()):
    if len(r) < 2:
        continue
    (xb, xl), (ub, ul) = r["XFERK"], r["UCX"]
    print(f"{op:5} {size:>8} {xb * 1e3:>11.1f} {ub * 1e3:>9.1f} {xb / ub:>6.2f}"
          f" {xl:>13.1f} {ul:>11.1f}")
    out.append({"op": op, "block": size, "xferk_gbps": xb, "ucx_gbps": ub,
                "xferk_lat_us": xl, "ucx_lat_us": ul})
print("JSON " + json.dumps(out))
EOT

# CPU per GiB: the busy CPU time of the whole machine over two runs of one
# block size that differ only in iterations (16, and 16 plus 128 MiB worth);
# their difference is the cost of the extra bytes alone (agent setup,
# registration and warm-up cancel).
echo "== CPU per GiB moved (whole machine, busy s/GiB; WRITE; difference of two runs, 128 MiB apart)"
printf '%-6s %8s %10s\n' backend block cpu_s_gib
entries=()
for backend in XFERK UCX; do
	for block in $((64 << 10)) $((1 << 20)); do
		cpu=()
		for iters in 16 $((16 + (128 << 20) / block)); do
			c0=$(cpu_busy)
			nixlbench_pair "$out/cpu-$backend-$block-$iters.log" \
				--backend "$backend" --op_type WRITE \
				--start_block_size $block --max_block_size $block \
				--total_buffer_size $((64 << 20)) --num_iter $iters \
				--warmup_iter 8 --large_blk_iter_ftr 1 || break
			cpu+=("$(echo "$(cpu_busy) - $c0" | bc)")
		done
		if [ ${#cpu[@]} -ne 2 ]; then
			echo "nixlbench $backend $block: failed"
			[ $backend = XFERK ] && exit 1
			continue
		fi
		gib=0.125
		v=$(echo "scale=3; (${cpu[1]} - ${cpu[0]}) / $gib" | bc)
		printf '%-6s %8s %10s\n' $backend $block "$v"
		entries+=("{\"backend\": \"$backend\", \"block\": $block, \"cpu_s_per_gib\": $v}")
	done
done
(IFS=,; echo "JSON [${entries[*]}]")

# Requests of many descriptors, as vLLM builds them (regions x blocks):
# nixlbench's batch is the descriptors of one request; 256-byte blocks.
echo "== descriptors per request (nixlbench, 256-byte blocks, WRITE)"
printf '%-6s %8s %10s %12s\n' backend descs MB/s latency_us
for backend in XFERK UCX; do
	for descs in 8192 65536; do
		log=$out/descs-$backend-$descs.log
		if ! nixlbench_pair "$log" --backend "$backend" --op_type WRITE \
			--start_block_size 256 --max_block_size 256 \
			--start_batch_size $descs --max_batch_size $descs \
			--total_buffer_size $((256 * descs)) --num_iter 8 --warmup_iter 2 \
			--large_blk_iter_ftr 1; then
			echo "nixlbench $backend $descs descriptors: failed; its last lines:"
			tail -n 5 "$log" "$log.target"
			[ $backend = XFERK ] && exit 1
			continue
		fi
		awk -v b=$backend -v d=$descs '$1 == 256 && $2 == d {
			printf "%-6s %8s %10.1f %12.1f\n", b, d, $3 * 1e3, $4 }' "$log"
	done
done

# Aborted transfers and reused buffers (the nixl_abort test judges XFERK's
# run; UCX's is the comparison): each backend's JSON line, or its failure.
echo "== abort and reuse (tests/nixl/abort_reuse.py, 8 MiB, 20 rounds)"
for backend in XFERK UCX; do
	(cd /tmp && timeout 300 /usr/bin/python3 \
		"$XFERK_SRC/tests/nixl/abort_reuse.py" "$backend" \
		--size $((8 << 20)) --iterations 20) ||
		echo "$backend: exit $?"
done
