#!/usr/bin/env python3
"""Every chapter has the same parts under the same names and stands alone (labkit/layout.py
says what that means): this fails, naming the chapter and the part, when one departs from
it. Nothing in the checkout may point outside it either (a path into ../shared/).

Run: python3 tests/cpu/check_layout.py [ROOT] (Meson runs it in the cpu suite). Exit 0 or 1.
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))
from labkit.chapters import load_chapters  # noqa: E402
from labkit.layout import layout_problems  # noqa: E402

OUTSIDE = ("../shared/", "shared/sources/")


def outside_pointers(root: Path) -> list:
    """Lines of tracked text files that point outside the checkout."""
    try:
        files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    found = []
    for rel in files:
        if rel == "tests/cpu/check_layout.py":
            continue
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if any(o in line for o in OUTSIDE):
                found.append(f"{rel}:{n} points outside the checkout ({line.strip()[:80]}): "
                             "a clone has no ../shared/; say what the source says instead")
    return found


def main() -> int:
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
    chapters = load_chapters(root)
    failed = 0
    for ch in chapters:
        problems = layout_problems(ch, chapters)
        for p in problems:
            print(f"FAILED: chapter {ch.name}: {p}")
        if not problems:
            print(f"chapter {ch.name}: the chapter's parts are there, under their names, and it stands alone")
        failed += bool(problems)
    for line in outside_pointers(root):
        print(f"FAILED: {line}")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
