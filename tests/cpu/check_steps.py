#!/usr/bin/env python3
"""Each chapter's steps are written once, in its README's step table; this fails, naming
the chapter and the disagreement, when the exercise's TODO(K): marks, the hints' `## Step
K` headings or the tests' [stepK] tags tell another story (or when the README's step K
lists other functions than TODO(K) marks in exercise.cu).

Run: python3 tests/cpu/check_steps.py (Meson runs it in the cpu suite). Exit 0 or 1.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from labkit.chapters import load_chapters  # noqa: E402
from labkit.steps import disagreements  # noqa: E402


def main() -> int:
    failed = 0
    for ch in load_chapters(REPO):
        if not ch.folder.is_dir():
            continue        # listed, not written yet
        problems = disagreements(ch)
        for p in problems:
            print(f"FAILED: chapter {ch.name}: {p}")
        if not problems:
            print(f"chapter {ch.name}: README step table, TODO(K) marks, hints and [stepK] tags agree")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
