#!/usr/bin/env python3
"""median_table.py: prints a Markdown table of the medians in a kairos_micro JSON result.

Usage: median_table.py RESULT.json [NAME_REGEX]

RESULT.json comes from
  kairos_micro --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
               --benchmark_out=RESULT.json --benchmark_out_format=json
One row per benchmark: the median over the repetitions of the time of one operation, in ns (the
per_op counter, which every kairos_micro benchmark sets), and its coefficient of variation.
"""
import json
import re
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        result = json.load(f)
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    medians, cvs, order = {}, {}, []
    for b in result["benchmarks"]:
        name = b["run_name"]
        if pattern and not pattern.search(name):
            continue
        if "per_op" not in b:
            continue
        if b.get("aggregate_name") == "median":
            medians[name] = b["per_op"] * 1e9
            order.append(name)
        elif b.get("aggregate_name") == "cv":
            cvs[name] = b["per_op"]
    print("| benchmark | ns per op (median of repetitions) | cv |")
    print("|---|---:|---:|")
    for name in order:
        cv = f"{cvs[name] * 100:.1f}%" if name in cvs else "-"
        print(f"| {name} | {medians[name]:.2f} | {cv} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
