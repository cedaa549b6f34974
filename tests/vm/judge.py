#!/usr/bin/env python3
"""Judge one VM run from the guest's report (see tests/vm/guest.sh).

Prints one line per test, PASS/FAIL/SKIP KERNEL/NAME, writes them to the
summary file, and exits 1 if anything failed. A run fails as a whole when
the guest did not finish, when a KUnit suite's plan is not met, when
kmemleak reports anything after unload, or when the kernel log has a
WARNING, BUG, Oops, KASAN, lockdep or similar report.
"""
import argparse
import re
import sys

KERNEL_ERRORS = re.compile(
    r"WARNING:|BUG:|BUG kmalloc|Oops|KASAN|kernel BUG|general protection fault|"
    r"possible circular locking|inconsistent lock state|possible recursive locking|"
    r"suspicious RCU usage|DEBUG_LOCKS_WARN_ON|UBSAN|Kernel panic|"
    r"INFO: task .* blocked|unreferenced object|kmemleak: [0-9]+ new suspected memory leaks|Call Trace")

KTAP_CASE = re.compile(r"^\s+(not ok|ok) \d+ (?:- )?(\S+)(.*)$")
KTAP_PLAN = re.compile(r"^\s+1\.\.(\d+)$")


def parse(path):
    """Returns (results, blocks, done): results in order, blocks as (kind, name, lines)."""
    results, blocks, done, cur = [], [], False, None
    try:
        text = open(path, errors="replace").read()
    except FileNotFoundError:
        text = ""
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if cur is not None:
            if line == "XFERK-END":
                blocks.append(cur)
                cur = None
            else:
                cur[2].append(line)
            continue
        parts = line.split(" ", 2)
        if parts[0] == "XFERK-RESULT" and len(parts) == 3:
            results.append((parts[1], int(parts[2])))
        elif parts[0] == "XFERK-BEGIN" and len(parts) == 3:
            cur = (parts[1], parts[2], [])
        elif line == "XFERK-DONE":
            done = True
    if cur is not None:
        blocks.append(cur)
    return results, blocks, done


def kunit_cases(suite, lines):
    """KTAP of one suite's debugfs results -> [(name, verdict)]."""
    cases, plan = [], None
    for line in lines:
        m = KTAP_PLAN.match(line)
        if m and plan is None:
            plan = int(m.group(1))
            continue
        m = KTAP_CASE.match(line)
        if not m:
            continue
        verdict = "PASS" if m.group(1) == "ok" else "FAIL"
        if "# SKIP" in m.group(3):
            verdict = "SKIP"
        cases.append((f"kunit/{suite}/{m.group(2)}", verdict))
    if plan is None or len(cases) != plan:
        cases.append((f"kunit/{suite}/plan", "FAIL"))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--mode", default="test")
    ap.add_argument("--results", required=True)
    ap.add_argument("--console", required=True)
    ap.add_argument("--summary", required=True)
    args = ap.parse_args()

    results, blocks, done = parse(args.results)
    outputs = {name: lines for kind, name, lines in blocks if kind == "output"}
    verdicts = []
    for name, rc in results:
        verdict = {0: "PASS", 77: "SKIP"}.get(rc, "FAIL")
        verdicts.append((name, verdict, rc))
    for kind, name, lines in blocks:
        if kind == "kunit":
            verdicts += [(n, v, None) for n, v in kunit_cases(name, lines)]

    # The kernel log: the dmesg block, else whatever the console caught.
    kernel_log = [l for k, _, ls in blocks if k == "dmesg" for l in ls]
    if not kernel_log:
        try:
            kernel_log = open(args.console, errors="replace").read().splitlines()
        except FileNotFoundError:
            pass
    splats = [l for l in kernel_log if KERNEL_ERRORS.search(l)]
    leaks = [l for k, _, ls in blocks if k == "kmemleak" for l in ls if l.strip()]
    verdicts.append(("vm/finished", "PASS" if done else "FAIL", None))
    if args.mode == "repro":
        # A reproduction passes when the kernel reports the bug it shows.
        uaf = any("KASAN: use-after-free" in l for l in splats)
        verdicts.append(("kernel/bug-reproduced", "PASS" if uaf else "FAIL", None))
    else:
        verdicts.append(("kernel/log-clean", "FAIL" if splats else "PASS", None))
    if any(k == "kmemleak" for k, _, _ in blocks):
        verdicts.append(("kernel/kmemleak-clean", "FAIL" if leaks else "PASS", None))

    failed = False
    with open(args.summary, "w") as summary:
        for name, verdict, rc in verdicts:
            line = f"{verdict} {args.kernel}/{name}"
            print(line + (f" (exit {rc})" if verdict == "FAIL" and rc is not None else ""))
            summary.write(line + "\n")
            if verdict == "FAIL":
                failed = True
                for l in outputs.get(name, [])[-40:]:
                    print(f"    | {l}")
    if args.mode in ("demo", "bench", "fuzz"):
        for name, lines in outputs.items():
            print(f"--- {name}")
            for l in lines:
                print(l)
    if splats:
        print(f"kernel log of {args.kernel} has {len(splats)} error line(s):")
        for l in splats[:40]:
            print(f"    | {l}")
    if leaks:
        print("kmemleak after unload:")
        for l in leaks[:40]:
            print(f"    | {l}")
    if not done:
        print(f"the guest did not finish; last console lines ({args.console}):")
        try:
            for l in open(args.console, errors="replace").read().splitlines()[-30:]:
                print(f"    | {l}")
        except FileNotFoundError:
            pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
