"""What a chapter consists of: the parts every chapter has under the same names, the parts
a chapter may add (under fixed names too), and the rules that keep chapters standalone.
docs/adding-a-chapter.md explains each part; tests/cpu/check_layout.py runs these checks
over every chapter of chapters.txt.

A chapter NN_topic is:
  chapters/NN_topic/   README.md, hints.md, meson.build, plot.py, main.cu, exercise.cu,
                       topic.cuh (the contract), provided.cu, harness.hpp;
                       may add harness.cu, device.cuh, program/ (the program's other files)
  solutions/NN_topic/exercise.cu   with the marker cml_chNN_solution_tu
  tests/test_NN_topic.cpp          with CML_INTEGRITY_CASE(NN, "NN_topic")
"""

from __future__ import annotations

import re
from pathlib import Path

from .chapters import Chapter

REQUIRED = ("README.md", "hints.md", "meson.build", "plot.py", "main.cu", "exercise.cu", "provided.cu",
            "harness.hpp")
OPTIONAL = ("harness.cu", "device.cuh", "profile.json")
PROGRAM_FOLDER = "program"
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".hpp")

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def contract_name(ch: Chapter) -> str:
    """The contract's file name: the chapter's topic, 'transfers.cuh' for 01_transfers."""
    return f"{ch.topic}.cuh"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _sources(folder: Path) -> list:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def _other_chapters(ch: Chapter, chapters: list) -> list:
    return [o.name for o in chapters if o.name != ch.name]


def _include_problems(path: Path, rel: str, others: list) -> list:
    problems = []
    for inc in _INCLUDE.findall(_read(path)):
        if ".." in Path(inc).parts:
            problems.append(f"{rel} includes \"{inc}\": a chapter includes nothing outside its own folder "
                            "(what two chapters share goes in common/)")
        elif any(o in inc for o in others) or inc.startswith(("chapters/", "solutions/")):
            problems.append(f"{rel} includes \"{inc}\", another chapter's or a solution's file")
    return problems


def layout_problems(ch: Chapter, chapters: list) -> list:
    """What in chapter `ch` departs from the skeleton, one sentence each ([] when nothing)."""
    problems = []
    folder = ch.folder
    root = ch.root
    if not folder.is_dir():
        return [f"chapters/{ch.name}/ is missing"]
    contract = contract_name(ch)
    expected = set(REQUIRED) | {contract}
    for part in sorted(expected):
        if not (folder / part).is_file():
            problems.append(f"chapters/{ch.name}/{part} is missing")
    allowed = expected | set(OPTIONAL)
    for p in sorted(folder.iterdir()):
        if p.is_dir() and not any(f.is_file() and "__pycache__" not in f.parts for f in p.rglob("*")):
            continue        # an empty folder is nothing (git keeps none; a copy of the tree may)
        if p.name == PROGRAM_FOLDER and p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix not in SOURCE_SUFFIXES:
                    problems.append(f"chapters/{ch.name}/{f.relative_to(folder)}: program/ holds the program's "
                                    "sources only")
            continue
        if p.name.startswith(".") or p.name == "__pycache__":
            continue
        if p.name not in allowed:
            problems.append(f"chapters/{ch.name}/{p.name} is not a part of a chapter (parts: "
                            f"{', '.join(sorted(expected))}; optional: {', '.join(OPTIONAL)}, {PROGRAM_FOLDER}/)")
    exercise = _read(folder / "exercise.cu")
    if exercise and f'"{contract}"' not in exercise:
        problems.append(f"chapters/{ch.name}/exercise.cu does not include its contract \"{contract}\"")

    solutions = root / "solutions" / ch.name
    solution = solutions / "exercise.cu"
    if not solution.is_file():
        problems.append(f"solutions/{ch.name}/exercise.cu is missing")
    else:
        marker = re.compile(r'extern\s+"C"\s+const\s+int\s+cml_ch' + re.escape(ch.num) + r'_solution_tu\s*=')
        if not marker.search(_read(solution)):
            problems.append(f"solutions/{ch.name}/exercise.cu lacks its marker: "
                            f"extern \"C\" const int cml_ch{ch.num}_solution_tu = 1;")
        for extra in sorted(p.name for p in solutions.iterdir() if p.name != "exercise.cu"):
            problems.append(f"solutions/{ch.name}/{extra}: a solution is its exercise.cu alone")

    test = root / "tests" / f"test_{ch.name}.cpp"
    if not test.is_file():
        problems.append(f"tests/test_{ch.name}.cpp is missing")
    elif f'CML_INTEGRITY_CASE({ch.num}, "{ch.name}")' not in _read(test):
        problems.append(f"tests/test_{ch.name}.cpp lacks its integrity case: "
                        f"CML_INTEGRITY_CASE({ch.num}, \"{ch.name}\")")

    others = _other_chapters(ch, chapters)
    for path in _sources(folder) + ([solution] if solution.is_file() else []) + ([test] if test.is_file() else []):
        problems += _include_problems(path, str(path.relative_to(root)), others)
    build = _read(folder / "meson.build")
    if ".." in build or "solutions" in build:
        problems.append(f"chapters/{ch.name}/meson.build reaches outside the chapter's folder: a chapter's build "
                        "uses its own files and common/ (declared dependencies), no other chapter's or solution's")
    plot = _read(folder / "plot.py")
    for o in others:
        if o in plot:
            problems.append(f"chapters/{ch.name}/plot.py uses {o}'s files: shared plotting goes in labkit/plotting.py")
    return problems
