#!/usr/bin/env python3
"""Sums LLVM's -time-passes reports (the text LLVM writes to its
-info-output-file) by pass name over every run they cover, and prints the
passes by their share of the pass execution time: a pass of the O2 pipeline
(new pass manager: a name ending in Pass) or of code generation (the legacy
pass manager's descriptive names).

    python3 bench/passes_report.py REPORT_FILE [TOP]
"""
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\s+([\d.]+) \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)"
                  r"\s+([\d.]+) \(\s*[\d.]+%\)\s+(.+?)\s*$")

def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    by_name = defaultdict(float)
    section = None
    for line in open(path, encoding="utf-8", errors="replace"):
        if "Pass execution timing report" in line:
            section = "pass"
        elif "timing report" in line:
            section = None
        m = LINE.match(line)
        if section != "pass" or not m or m.group(5) == "Total":
            continue
        name = re.sub(r" #\d+$", "", m.group(5))
        by_name[name] += float(m.group(3))  # user + system seconds
    total = sum(by_name.values())
    if total <= 0:
        sys.exit(f"{path}: no pass execution timing report")
    o2 = sum(v for k, v in by_name.items() if k.endswith("Pass") or k.endswith("PassManager"))
    print(f"pass execution {total * 1e3:.1f} ms: O2 pipeline {100 * o2 / total:.1f}%, "
          f"code generation {100 * (total - o2) / total:.1f}%")
    for name, v in sorted(by_name.items(), key=lambda kv: -kv[1])[:top]:
        kind = "O2" if name.endswith("Pass") else "codegen"
        print(f"{100 * v / total:6.2f}%  {v * 1e3:8.1f} ms  {kind:7s}  {name}")

main()
