#!/usr/bin/env python3
"""What each chapter needs of the GPU is written once, in needs.txt; each chapter's README
says it in one line, `**Needs:** ...`, worded from that file (labkit/needs.py). This fails,
naming the chapter and the line it wants, when a README says something else or nothing,
and when needs.txt names a chapter that chapters.txt does not list.

Run: python3 tests/cpu/check_needs.py (Meson runs it in the cpu suite). Exit 0 or 1.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from labkit.chapters import load_chapters  # noqa: E402
from labkit.needs import course_needs, readme_sentence  # noqa: E402


def main() -> int:
    needs = course_needs(REPO)
    if not needs:
        print("FAILED: needs.txt is missing or names no need")
        return 1
    chapters = [ch for ch in load_chapters(REPO) if ch.folder.is_dir()]
    failed = 0
    for unknown in sorted({n.chapter for n in needs} - {ch.num for ch in chapters}):
        print(f"FAILED: needs.txt names chapter {unknown}, which chapters.txt does not list")
        failed += 1
    for ch in chapters:
        want = readme_sentence(ch.num, needs)
        lines = [l.strip() for l in ch.readme.read_text(encoding="utf-8").splitlines()]
        said = [l for l in lines if l.startswith("**Needs:**")]
        if said == [want]:
            print(f"chapter {ch.name}: README says what needs.txt does")
            continue
        failed += 1
        print(f"FAILED: chapter {ch.name}: its README must say, in one line above its step table, as needs.txt "
              f"does:\n  {want}\n" + (f"  it says:\n  " + "\n  ".join(said) if said else "  it has no **Needs:** line"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
