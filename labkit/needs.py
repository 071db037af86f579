"""needs.txt (at the repository's root), read in Python: what each chapter's steps need of
the GPU, as one sentence a chapter's README carries (tests/cpu/check_needs.py holds each
README to it). The tests, the programs and `./lab doctor` read the same file through
common/cml/needs.hpp; this module words it the same way."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .core import ROOT

_FLAGS = {
    "map_host_memory": "mapped host memory (canMapHostMemory)",
    "managed_memory": "managed memory (managedMemory)",
    "concurrent_managed_access": "concurrent managed access (concurrentManagedAccess)",
}


@dataclass
class Need:
    chapter: str      # "07"
    first: int        # 0: every step
    last: int
    key: str          # "cc", "copy_engines", a flag...
    value: str        # "8.0", "2", "" for a flag
    what: str

    def covers(self, step: int) -> bool:
        """Whether this need is one of step `step`'s (as cml::needs::Entry::covers says)."""
        return self.first == 0 or self.first <= step <= self.last

    def describe(self) -> str:
        """As cml::needs::describe says it."""
        if self.key == "cc":
            return f"compute capability {self.value}"
        if self.key == "copy_engines":
            return f"{self.value} copy engine{'' if self.value == '1' else 's'}"
        if self.key == "shared_per_block":
            return f"{self.value} KiB of shared memory per block"
        if self.key == "threads_per_sm":
            return f"{self.value} resident threads per SM"
        if self.key == "gpus":
            words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight"]
            count = int(self.value) if self.value.isdigit() else 0
            return f"{words[count] if count < len(words) else count} GPU{'' if count == 1 else 's'}"
        return _FLAGS.get(self.key, self.key)

    def steps(self) -> str:
        """'every step', 'step 3', 'steps 4–5'."""
        if self.first == 0:
            return "every step"
        return f"step {self.first}" if self.first == self.last else f"steps {self.first}–{self.last}"


def parse(text: str) -> list[Need]:
    """needs.txt's lines (the C++ parser checks them strictly: tests/cpu/test_needs.cpp)."""
    out = []
    for line in text.splitlines():
        words = line.split(None, 3)
        if len(words) < 4 or words[0].startswith("#"):
            continue
        chapter, steps, spec, what = words
        if steps == "*":
            first = last = 0
        else:
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", steps)
            if not m:
                continue
            first = int(m.group(1))
            last = int(m.group(2) or first)
        key, _, value = spec.partition("=")
        out.append(Need(chapter, first, last, key, value, what.strip()))
    return out


def course_needs(root: Path = ROOT) -> list[Need]:
    try:
        return parse((root / "needs.txt").read_text(encoding="utf-8"))
    except OSError:
        return []


def readme_sentence(chapter: str, needs: list[Need]) -> str:
    """The line a chapter's README says what its steps need with (one line, so it can be
    found and compared)."""
    mine = [n for n in needs if n.chapter == chapter]
    if not mine:
        return ("**Needs:** nothing beyond what the course asks of every GPU (compute capability 7.5 "
                "or newer; `needs.txt`).")
    parts = [f"{n.describe()} in {n.steps()}, for {n.what}" for n in mine]
    return ("**Needs:** " + "; ".join(parts) + ". On a GPU without it the tests skip those steps, "
            "saying why, and `./lab doctor` lists what this GPU can run (`needs.txt`).")
