"""labkit: the code behind ./lab, the learner's one command for CUDA Memory Lab.

One module per part of the learner's loop: chapters and state, the toolchain and build/,
building and showing compile errors short, run, check (with and without a GPU), watch,
hints, diff and reset, doctor, bench, the self-test, and the command line (cli.py).

Python 3.8+ standard library only: the GPU machine has no network, and a course tool that
needs a pip install before its first use would fail exactly where it matters.
"""
