#!/usr/bin/env python3
"""Chapter 06's mechanism on the CPU: runs `PROGRAM --mode=mechanism` (the program reads its
own SASS and resource report with cuobjdump: no stack frame and no LDL/STL in
fir_registers_kernel, constant reads at immediate offsets only in mix_constant_kernel,
TEX and no LDG in rotate_texture_kernel) and passes its exit code on: 0 all steps shown,
1 a step not (the program names it), 77 cuobjdump not available (the reason printed).

Run: python3 tests/cpu/check_ch06_mechanism.py build/chapters/ch06_solution
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check_ch06_mechanism.py PROGRAM", file=sys.stderr)
        return 2
    r = subprocess.run([sys.argv[1], "--mode=mechanism"], capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout + r.stderr)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
