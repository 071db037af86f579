#!/usr/bin/env python3
"""Checks a chapter program's answers to its command line, on any machine (no GPU needed):
--help exits 0 and prints the usage; every bad command line exits 2 with exactly one line
on stderr and nothing on stdout, before any GPU is probed.

    python3 check_command_line.py build/chapters/ch01
"""
import subprocess
import sys

BAD = [
    ["--no-such-option"],
    ["--size=12X"],
    ["--size=abc"],
    ["--size=-4"],
    ["--iters=0"],
    ["--iters=many"],
    ["--device=-1"],
    ["--warmup"],
    ["positional"],
    ["--csv=maybe"],
]


def run(program, args):
    return subprocess.run([program, *args], capture_output=True, text=True, timeout=30)


def main(program):
    failures = []
    r = run(program, ["--help"])
    if r.returncode != 0 or "usage:" not in r.stdout or "exit codes" not in r.stdout:
        failures.append(f"--help: exit {r.returncode}, stdout starts {r.stdout[:80]!r}")
    for args in BAD:
        r = run(program, args)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2:
            failures.append(f"{' '.join(args)}: exit {r.returncode}, want 2 (stderr: {r.stderr.strip()!r})")
        elif len(lines) != 1 or not lines[0].startswith("error: "):
            failures.append(f"{' '.join(args)}: want one 'error: ...' line on stderr, got {lines!r}")
        elif r.stdout.strip():
            failures.append(f"{' '.join(args)}: printed on stdout: {r.stdout.strip()[:80]!r}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(BAD) + 1 - len(failures)} of {len(BAD) + 1} command lines answered as documented")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_command_line.py PROGRAM", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
