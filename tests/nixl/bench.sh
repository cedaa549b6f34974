#!/bin/bash
# make bench: nixlbench (NIXL's benchmark) with the XFERK backend next to
# UCX over the same rxe device, in one VM run: bandwidth and latency per
# block size, WRITE and READ. nixlbench runs as two instances (initiator
# and target) joined by its ASIO runtime on this host.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
out=/tmp/nixlbench
mkdir -p "$out"
port=12345
for backend in XFERK UCX; do
	for op in WRITE READ; do
		args=(--runtime_type ASIO --asio_address 127.0.0.1 --asio_port $port
			--backend "$backend" --op_type "$op" --start_block_size 4096
			--max_block_size $((1 << 20)) --total_buffer_size $((64 << 20))
			--num_iter 64 --warmup_iter 8 --large_blk_iter_ftr 4)
		port=$((port + 1))
		# The first instance listens and is rank 0, the initiator, which
		# prints the results; the second connects and is the target.
		timeout 300 "$NIXLBENCH" "${args[@]}" >"$out/$backend-$op.log" 2>&1 &
		sleep 1
		timeout 300 "$NIXLBENCH" "${args[@]}" >"$out/$backend-$op.target" 2>&1
		rc=$?
		wait $! || rc=$?
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
