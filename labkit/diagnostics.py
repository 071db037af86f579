"""Compile and link errors, short and in the learner's terms: their file's lines first
(the line as they wrote it, not a macro's expansion), a missing or mistyped function
named with the header that declares it, and never pages of template notes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from .chapters import Chapter
from .core import MAX_ERROR_LINES, ROOT
from .source import top_level_items
from .terminal import display_path, paint, say, unique

# nvcc: `path(12): error: ...`; gcc/clang: `path:12:5: error: ...`.
_DIAG = re.compile(r"^(?P<path>\S+?)(?:\((?P<line>\d+)\)|:(?P<gline>\d+)(?::(?P<col>\d+))?):\s*"
                   r"(?P<rest>(?P<kind>(?:fatal )?error|warning|note|remark)\b.*)$")
_MACRO_NOTE = re.compile(r"note: in expansion of macro")
_UNDEFINED = re.compile(r"undefined reference to [`'‘\"](?P<sym>.+?)['’\"]\s*$")
_HEADER_SUFFIXES = (".cuh", ".hpp", ".h")
_NOT_TYPES = {"return", "else", "throw", "co_return", "case", "delete", "new"}


def short_source_path(path: str, root: Path = ROOT) -> str:
    """A compiler's path (../chapters/x.cu, /abs/root/common/y.cpp) as a repo path."""
    prefix = str(root) + "/"
    if path.startswith(prefix):
        path = path[len(prefix):]
    while path.startswith("../"):
        path = path[3:]
    return path


def _source_line(root: Path, rel: str, line_no: int) -> Optional[str]:
    """Line line_no of a file of the checkout, as written (None when unreadable)."""
    try:
        lines = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[line_no - 1] if 0 < line_no <= len(lines) else None


def _token_at(text: str, col: int) -> str:
    """The token (string literal, word or symbol) that starts at a caret's column."""
    m = re.compile(r'"(?:\\.|[^"\\])*"|\w+|\S').match(text, col)
    return m.group(0) if m else ""


def as_written(echo: str, caret: Optional[str], real: str) -> list[str]:
    """nvcc echoes the line of an error inside a macro (CUDA_CHECK(...)) as the macro's
    expansion; the learner needs their own line, with the caret under the same token."""
    shown = ["  " + real.rstrip()]
    if caret is not None and "^" in caret:
        token = _token_at(echo, caret.index("^"))
        at = real.find(token) if token else -1
        if at >= 0:
            shown.append(" " * (2 + at) + "^")
    return shown


def extract_compile_errors(output: str, exercise_rel: Optional[str] = None,
                           limit: int = MAX_ERROR_LINES, root: Path = ROOT) -> list[str]:
    """The errors, short. With exercise_rel: the diagnostics in the learner's file as
    `path:line: error…`, each with its source line (as written) and caret, not pages of
    template notes from headers; an error reported inside a macro's definition is moved to
    the learner's line that expanded it. Without it, or when their file is not named: the
    error diagnostics of any file, then link errors, then the log's last lines."""
    lines = output.splitlines()

    def continuation(i: int) -> int:      # past the indented lines that belong to line i
        j = i + 1
        while j < len(lines) and lines[j][:1] in (" ", "\t") and lines[j].strip():
            j += 1
        return j

    def collect(wanted) -> list[str]:
        picked, i = [], 0
        while i < len(lines):
            m = _DIAG.match(lines[i].strip())
            if not m:
                i += 1
                continue
            path = short_source_path(m.group("path"), root)
            line_no = m.group("line") or m.group("gline")
            col = f":{m.group('col')}" if m.group("col") else ""
            j = continuation(i)
            if wanted(path, m.group("kind")):
                picked.append(f"{path}:{line_no}{col}: {m.group('rest')}")
                body = [l.rstrip() for l in lines[i + 1:j]]
                real = _source_line(root, path, int(line_no)) if exercise_rel and path == exercise_rel else None
                if body and real is not None and body[0].strip() != real.strip() and "|" not in body[0]:
                    body = as_written(body[0], body[1] if len(body) > 1 else None, real) + body[2:]
                picked += body
            elif exercise_rel and m.group("kind").endswith("error"):
                picked += _expanded_in_exercise(lines, j, exercise_rel, m.group("rest"), root)
            i = j
        return picked

    picked = collect(lambda path, kind: path == exercise_rel and kind != "note") if exercise_rel else []
    if not picked:
        picked = collect(lambda path, kind: kind.endswith("error"))
    if not picked:
        pat = re.compile(r"\berror\b|undefined reference|multiple definition", re.IGNORECASE)
        skip = re.compile(r"^(ninja: build stopped|FAILED: |\[\d+/\d+\])")
        picked = [l.rstrip() for l in lines if pat.search(l) and not skip.match(l)]
    if not picked:
        picked = [l.rstrip() for l in lines if l.strip()][-limit:]
    if len(picked) > limit:
        more = len(picked) - limit
        picked = picked[:limit] + [f"... ({more} more line{'s' if more != 1 else ''})"]
    return picked


def _expanded_in_exercise(lines: list, start: int, exercise_rel: str, message: str,
                          root: Path) -> list[str]:
    """gcc reports an error in a macro's body at the macro's definition, followed by
    `note: in expansion of macro` at the line that used it: that line, when it is the
    learner's, is where the error is shown."""
    for line in lines[start:start + 30]:
        m = _DIAG.match(line.strip())
        if not m:
            continue
        if m.group("kind").endswith("error"):
            break
        path = short_source_path(m.group("path"), root)
        if path == exercise_rel and _MACRO_NOTE.search(line):
            line_no = int(m.group("line") or m.group("gline"))
            real = _source_line(root, path, line_no)
            shown = [f"{path}:{line_no}: {message}"]
            return shown + (["  " + real.rstrip()] if real is not None else [])
    return []


# --------------------------------------------------------------------------------------
# Link errors: a function of the chapter's API that exercise.cu does not define
# --------------------------------------------------------------------------------------

def demangle(symbol: str) -> str:
    """A C++ symbol as written (ch01::free_pinned(void*)); the mangled name when c++filt
    is not there (the linker usually demangles already)."""
    if not symbol.startswith("_Z") or shutil.which("c++filt") is None:
        return symbol
    try:
        r = subprocess.run(["c++filt", symbol], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return symbol
    return r.stdout.decode(errors="replace").strip() or symbol


def undefined_symbols(output: str) -> list[str]:
    """The symbols the linker could not find, demangled, each once."""
    found = [m.group("sym") for m in map(_UNDEFINED.search, output.splitlines()) if m]
    return unique([demangle(s) for s in found])


def function_name(symbol: str) -> str:
    """`free_pinned` from `ch01::free_pinned(void*)` (the name before the parameters)."""
    head = symbol.split("(", 1)[0]
    return head.rsplit("::", 1)[-1].strip()


def declaring_header(folder: Path, name: str) -> Optional[Path]:
    """The chapter's header that declares `name(` (a line of type words, then the name: a
    call such as `return name(p);` does not count), the .cuh contract first."""
    pattern = re.compile(rf"(?m)^\s*((?:[\w:<>,*&\[\]]+\s+)+)[*&]*{re.escape(name)}\s*\(")
    headers = [p for p in folder.iterdir() if p.suffix in _HEADER_SUFFIXES] if folder.is_dir() else []
    for path in sorted(headers, key=lambda p: (_HEADER_SUFFIXES.index(p.suffix), p.name)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in pattern.finditer(text):
            if m.group(1).split()[0] not in _NOT_TYPES:
                return path
    return None


def explain_missing_functions(output: str, ch: Chapter) -> list[str]:
    """One sentence per function of the chapter's API the learner's exercise.cu does not
    define (or defines with another signature); [] when the link error is something else."""
    try:
        mine = top_level_items(ch.exercise.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        mine = []
    out = []
    for symbol in undefined_symbols(output):
        name = function_name(symbol)
        header = declaring_header(ch.folder, name) if name else None
        if header is None:
            continue
        text = f"your exercise.cu does not define `{symbol}` (declared in {header.name})"
        same_name = [i for i in mine if i.is_function and i.name == name]
        if same_name:
            text += (f": the {name} at exercise.cu:{same_name[0].line} has another signature; "
                     f"make it match {header.name}")
        out.append(text)
    return out


def report_build_failure(err, ch: Optional[Chapter], stream=None) -> None:
    """Shows the compile or link error first and short, then where the whole log is. With
    ch, the learner's file is the one to look at; without (the solution), any file."""
    stream = stream or sys.stdout
    missing = explain_missing_functions(err.output, ch) if ch is not None else []
    if missing:
        say(paint(f"your {ch.exercise_rel} does not link:", "red", stream), stream)
        for line in missing:
            say("  " + line, stream)
    else:
        exercise_rel = ch.exercise_rel if ch is not None else None
        lines = extract_compile_errors(err.output, exercise_rel)
        mine = exercise_rel is not None and any(l.startswith(exercise_rel + ":") for l in lines)
        what = f"your {exercise_rel}" if mine else err.target
        say(paint(f"{what} does not compile:", "red", stream), stream)
        for line in lines:
            say("  " + line, stream)
    say(f"full log: {display_path(err.log)}", stream)
