"""The mistakes each chapter teaches, put back into its solution by tools/mutants.py.

One module per chapter (chNN.py, its MUTANTS list), so the chapters' authors never edit
the same file; load() gathers them by chapter folder name.
"""
import importlib
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Mutant:
    name: str
    edits: list           # [(old text of the solution, new text), ...]
    tag: str              # the step's tests, e.g. "[step2][mechanism]"; its [stepK] names the step
    expect: str           # text the failure must contain
    whole: bool = False   # run every test case: the watchdog's mutants (the other steps must report)
    compile_error: bool = False  # caught when the build fails with `expect` (a static_assert's words)
    keeps_marker: bool = False   # a copy of the solution: its marker symbol stays, for the tests to find

    @property
    def step(self):
        m = re.search(r"\[step(\d+)\]", self.tag)
        return int(m.group(1)) if m else None


def load():
    """{chapter folder name: [Mutant, ...]} from every chNN.py beside this file."""
    chapters = {}
    for path in sorted(Path(__file__).parent.glob("ch[0-9][0-9].py")):
        module = importlib.import_module(f"{__name__}.{path.stem}")
        chapters[module.CHAPTER] = module.MUTANTS
    return chapters
