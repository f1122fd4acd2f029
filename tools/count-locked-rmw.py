#!/usr/bin/env python3
"""count-locked-rmw.py: instructions and locked read-modify-writes per operation, per thread,
counted exactly (callgrind), for issue 29's path budget.

    tools/count-locked-rmw.py BUILD_DIR [MODE] [N] [--caller-only] [--steady] [--max-instructions X] [--max-locked Y]
                              [--max-scheduler-instructions Z]

runs `kairos_submit_driver N MODE` and `kairos_submit_driver N/2 MODE` (MODE: cancel, the W2
pair at lag 0 (default); "" (W1: schedule); execute_after (W1 with no future); execute; schedule0; burst) under
`valgrind --tool=callgrind --dump-instr=yes --separate-threads=yes`, and for each thread prints
the difference of the two runs divided by N/2: instructions (Ir) and executed `lock`-prefixed
instructions (and `xchg` with memory, which locks implicitly) per operation. Thread 1 is the
caller (the producer); the others are the scheduler's. The lock-prefixed instructions are found
by disassembling the driver (objdump; libkairos is linked statically into it), so a locked RMW
in a shared library (libstdc++, libc) is not counted: kairos makes none there on these paths.

With --steady (MODE schedule, execute_after, cancel or cancel1024) the driver runs its loop in chunks of 16,384
with a pause between them, outside the counted loop, in which the scheduler's thread recycles
what the chunk freed. Without it, valgrind's one thread at a time rarely lets that thread run
during the loop, so the caller carves new nodes and inbox blocks all along (about 10
instructions per W2 pair at lag 1,024) where a real steady state takes recycled ones. Both
counts are exact; the steady one is the steady state's.

With --max-scheduler-instructions (without --caller-only) the scheduler's threads' instructions
per operation, summed, are bounded too (the leader's share of a W2 pair, with --steady; of an
execute() task, where valgrind's one thread at a time makes the leader take each chunk the
caller left as one burst, as W7's leader does).

With --max-instructions / --max-locked it is also a test (CTest `PathBudget.*`,
perf/micro/CMakeLists.txt): exit status 1 if the caller's own path costs more per operation
(--caller-only skips the whole-program runs). Nothing else in the build depends on it. Counts do not depend on the
machine's load (callgrind counts instructions, not time).
"""
import os
import re
import subprocess
import sys
import tempfile


def locked_addresses(binary):
    """Addresses (file virtual addresses) of lock-prefixed or implicitly locked instructions."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", binary], capture_output=True, text=True,
                         check=True).stdout
    addrs, symbols = set(), {}
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            symbols[m.group(2)] = int(m.group(1), 16)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if not m:
            continue
        ins = m.group(2).strip()
        if ins.startswith("lock ") or (ins.startswith("xchg") and "(" in ins):
            addrs.add(int(m.group(1), 16))
    return addrs, symbols


def parse_callgrind(path, binary_name):
    """Per-instruction Ir of the driver's own object: {runtime address: Ir}; the lowest address
    seen per function name (a function's entry always executes); and the thread's total Ir, every
    object included (the vDSO's clock read, libc)."""
    costs, fn_min, total, fn_of = {}, {}, [0], {}
    ob_names, fn_names = {}, {}
    cur_ob = cur_fn = None
    in_driver = False
    last_addr = 0
    skip_next = False  # the cost line after calls= is the call's inclusive cost
    npos = 1  # position columns before the costs ("positions: instr line": 2)
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                npos = len(line.split()) - 1
                continue
            if line.startswith(("ob=", "fn=", "cob=", "cfn=", "calls=", "fl=", "fi=", "fe=", "cfi=", "cfl=")):
                key, _, val = line.partition("=")
                m = re.match(r"\((\d+)\)(?: (.*))?", val)
                if key in ("ob", "cob", "fn", "cfn"):
                    # A compressed name, "(id) name" the first time and "(id)" after, or a plain one.
                    table = ob_names if key.endswith("ob") else fn_names
                    if m and m.group(2):
                        table[m.group(1)] = m.group(2)
                    name = table.get(m.group(1)) if m else val
                    if key == "ob":
                        cur_ob = name
                        in_driver = cur_ob is not None and os.path.basename(cur_ob) == binary_name
                    elif key == "fn":
                        cur_fn = name
                elif key == "calls":
                    skip_next = True
                continue
            if not line or not (line[0] in "+-0123456789*"):
                continue
            parts = line.split()
            pos = parts[0]
            if pos.startswith("0x"):
                addr = int(pos, 16)
            elif pos.startswith("+"):
                addr = last_addr + int(pos[1:], 16 if pos[1:].startswith("0x") else 10)
            elif pos.startswith("-"):
                addr = last_addr - int(pos[1:], 16 if pos[1:].startswith("0x") else 10)
            elif pos == "*":
                addr = last_addr
            else:
                continue
            last_addr = addr
            if skip_next:
                skip_next = False
                continue
            ir = int(parts[npos]) if len(parts) > npos else 0
            total[0] += ir
            if not in_driver:
                continue
            costs[addr] = costs.get(addr, 0) + ir
            fn_of[addr] = cur_fn
            if cur_fn is not None:
                fn_min[cur_fn] = min(fn_min.get(cur_fn, addr), addr)
    parse_callgrind.fn_of = fn_of
    return costs, fn_min, total[0]


def run(driver, n, mode, outdir, loop_only, steady=False):
    prefix = os.path.join(outdir, f"cg.{n}.{int(loop_only)}")
    cmd = ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--separate-threads=yes", "--compress-pos=no",
           "--compress-strings=no", f"--callgrind-out-file={prefix}.%p"]
    if loop_only:  # the caller's own path: only inside the driver's loop (submit_loop, cancel_loop, ...)
        cmd.append("--toggle-collect=*_loop*")
    cmd += [driver, str(n)] + ([mode or "schedule", "steady"] if steady else [mode] if mode else [])
    subprocess.run(cmd, check=True, capture_output=True)
    files = sorted(f for f in os.listdir(outdir) if f.startswith(f"cg.{n}.{int(loop_only)}."))
    threads = {}
    for f in files:
        m = re.search(r"-(\d+)$", f)
        if m:
            threads[int(m.group(1))] = os.path.join(outdir, f)
    return threads


def main():
    args, limits, caller_only, steady = [], {}, False, False
    argv = sys.argv[1:]
    while argv:
        a = argv.pop(0)
        if a == "--caller-only":
            caller_only = True
        elif a == "--steady":
            steady = True
        elif a in ("--max-instructions", "--max-locked", "--max-scheduler-instructions"):
            if not argv:
                print(f"{a} needs a value", file=sys.stderr)
                return 2
            limits[a] = float(argv.pop(0))
        else:
            args.append(a)
    if not args:
        print(__doc__)
        return 2
    build = args[0]
    mode = args[1] if len(args) > 1 else "cancel"
    if mode == "schedule":  # W1: the driver's default mode
        mode = ""
    n = int(args[2]) if len(args) > 2 else 200000
    over = []
    driver = os.path.join(build, "perf", "micro", "kairos_submit_driver")
    locked, symbols = locked_addresses(driver)
    ops = n - n // 2
    with tempfile.TemporaryDirectory() as d:
        for loop_only in ((True,) if caller_only else (True, False)):
            per = {}
            for size in (n, n // 2):
                for tid, path in run(driver, size, mode, d, loop_only, steady).items():
                    costs, fn_min, ir = parse_callgrind(path, os.path.basename(driver))
                    base = None  # runtime address - file address (a PIE is loaded elsewhere)
                    for fn, lo in fn_min.items():
                        if fn in symbols:
                            base = lo - symbols[fn]
                            break
                    if base is None:
                        per.setdefault(tid, {})[size] = (ir, 0, {})
                        continue
                    lk = sum(c for a, c in costs.items() if (a - base) in locked)
                    sites = {}
                    for a, c in costs.items():
                        if (a - base) in locked:
                            fn = parse_callgrind.fn_of.get(a) or "?"
                            sites[fn] = sites.get(fn, 0) + c
                    per.setdefault(tid, {})[size] = (ir, lk, sites)
            if loop_only:
                print(f"kairos_submit_driver {mode or 'schedule'}{' steady' if steady else ''}: per operation, "
                      f"{n} - {n // 2} operations by difference")
                print("the caller's own path (inside the driver's loop; callgrind --toggle-collect):")
            else:
                print("the whole program, per thread (thread 1: the caller, loop and all, and whatever scheduler work")
                print("valgrind's one-thread-at-a-time run left to it at the end: shutdown_now's drain; the others: the")
                print("scheduler's threads). Whole program less the caller's own path = the scheduler's share:")
            print("thread  instructions  locked RMWs")
            scheduler_share = 0.0
            for tid in sorted(per):
                if n in per[tid] and n // 2 in per[tid]:
                    (ir1, lk1, s1), (ir2, lk2, s2) = per[tid][n], per[tid][n // 2]
                    if loop_only and ir1 == ir2:
                        continue
                    print(f"{tid:>6}  {(ir1 - ir2) / ops:12.1f}  {(lk1 - lk2) / ops:11.2f}")
                    if not loop_only and tid != 1:
                        scheduler_share += (ir1 - ir2) / ops
                    if loop_only:
                        for flag, value in (("--max-instructions", (ir1 - ir2) / ops), ("--max-locked", (lk1 - lk2) / ops)):
                            if flag in limits and value > limits[flag]:
                                over.append(f"{flag[6:]}: {value:.2f} per operation, over the budget of {limits[flag]}")
                    for fn in sorted(s1, key=lambda f: -(s1[f] - s2.get(f, 0))):
                        dd = (s1[fn] - s2.get(fn, 0)) / ops
                        if dd >= 0.01:
                            print(f"{'':>20}  {dd:11.2f}  in {fn[:110]}")
            if not loop_only:
                print(f"the scheduler's threads together: {scheduler_share:.1f} instructions per operation")
                limit = limits.get("--max-scheduler-instructions")
                if limit is not None and scheduler_share > limit:
                    over.append(f"the scheduler's threads: {scheduler_share:.1f} instructions per operation, "
                                f"over the budget of {limit}")
    for line in over:
        print(f"FAIL: {line}" if line.startswith("the scheduler") else f"FAIL: the caller's path, {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
