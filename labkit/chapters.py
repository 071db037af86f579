"""The chapter list (chapters.txt, which Meson reads too) and where each chapter's files are."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .core import EXIT_FAIL, EXIT_USAGE, ROOT, LabError

_DIGITS = re.compile(r"[0-9]+\Z")


@dataclass
class Chapter:
    """One line of chapters.txt and where its files live."""
    num: str      # "01"
    name: str     # "01_transfers"
    title: str
    root: Path

    @property
    def topic(self) -> str:
        return self.name.split("_", 1)[1] if "_" in self.name else self.name

    @property
    def folder(self) -> Path:
        return self.root / "chapters" / self.name

    @property
    def exercise(self) -> Path:
        return self.folder / "exercise.cu"

    @property
    def solution(self) -> Path:
        return self.root / "solutions" / self.name / "exercise.cu"

    @property
    def readme(self) -> Path:
        return self.folder / "README.md"

    @property
    def hints(self) -> Path:
        return self.folder / "hints.md"

    @property
    def docs(self) -> Path:
        return self.root / "docs" / f"{self.name}.md"

    @property
    def plot_script(self) -> Path:
        return self.folder / "plot.py"

    @property
    def tests(self) -> Path:
        return self.root / "tests" / f"test_{self.name}.cpp"

    @property
    def exercise_rel(self) -> str:
        return f"chapters/{self.name}/exercise.cu"

    @property
    def solution_rel(self) -> str:
        return f"solutions/{self.name}/exercise.cu"


def require_exercise(ch: Chapter) -> None:
    """Every command that builds or reads the learner's file needs it: one line when it is
    gone, with the command that brings the starter back."""
    if not ch.exercise.is_file():
        raise LabError(f"{ch.exercise_rel} is missing: ./lab reset {ch.num} restores the starter", EXIT_FAIL)


def load_chapters(root: Path = ROOT) -> list[Chapter]:
    """Reads chapters.txt, the one list Meson reads too, so lab and the build agree."""
    path = root / "chapters.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LabError(f"cannot read {path}: {e.strerror}", EXIT_USAGE) from e
    chapters = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        name = parts[0]
        chapters.append(Chapter(num=name.split("_", 1)[0], name=name,
                                title=parts[1].strip() if len(parts) > 1 else "", root=root))
    return chapters


def resolve_chapter(spec: str, chapters: list[Chapter]) -> Chapter:
    """Accepts 01, 1, 01_transfers, transfers (and ch01): the learner should not have to
    remember which form a command wants."""
    s = spec.strip().lower()
    if s.startswith("ch") and _DIGITS.match(s[2:]):
        s = s[2:]
    for ch in chapters:
        # ASCII digits only: str.isdigit() accepts '²', which int() then refuses.
        if _DIGITS.match(s) and _DIGITS.match(ch.num) and int(s) == int(ch.num):
            return ch
        if s in (ch.name.lower(), ch.topic.lower()):
            return ch
    known = ", ".join(ch.name for ch in chapters) or "none"
    raise LabError(f"no chapter '{spec}' (chapters: {known})", EXIT_USAGE)


def chapter_of(args, root: Path = ROOT) -> Chapter:
    """The chapter a command's NN argument names."""
    return resolve_chapter(args.chapter, load_chapters(root))
