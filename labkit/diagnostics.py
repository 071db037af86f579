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
from .terminal import display_path, paint, say

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
                # nvcc: details first ("argument types are: (int, unsigned int)", deeper
                # indented), then the line echoed and its caret.
                caret = next((k for k, l in enumerate(body) if l.strip() == "^"), None)
                details, body = (body[:caret - 1], body[caret - 1:]) if caret and caret >= 1 else ([], body)
                picked += ["    " + d.strip() for d in details]
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


_LINK_CONTEXT = re.compile(r"in function [`'‘\"](?P<fn>.+?)['’\"]:\s*$")
_PTXAS_UNRESOLVED = re.compile(r"ptxas fatal\s*:\s*Unresolved extern function '(?P<sym>[^']+)'")
_NOISE = re.compile(r"^(INFO: |ninja: |\[\d+/\d+\] |FAILED: |collect2: |\S*(nvcc|c\+\+|g\+\+|cc|ld)\s+-)")


def undefined_references(output: str) -> list[tuple[str, str]]:
    """(symbol, the function that uses it) for each undefined reference the linker names,
    demangled, each symbol once; the user is '' when the linker did not say."""
    out, seen, user = [], set(), ""
    for line in output.splitlines():
        ctx = _LINK_CONTEXT.search(line)
        if ctx:
            user = demangle(ctx.group("fn"))
            continue
        m = _UNDEFINED.search(line)
        if m:
            sym = demangle(m.group("sym"))
            if sym not in seen:
                seen.add(sym)
                out.append((sym, user))
    return out


def _exercise_items(ch: Chapter) -> list:
    try:
        return top_level_items(ch.exercise.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


def _declared_not_defined(items: list, name: str):
    """exercise.cu's declaration of `name` with no definition anywhere in the file, or None."""
    defined = any(i.is_function and i.name == name for i in items)
    decl = next((i for i in items if not i.is_function and i.name == name and "(" in i.code), None)
    return None if defined else decl


def _users(items: list, name: str) -> list:
    """The definitions in exercise.cu whose code uses `name`."""
    return [i for i in items if i.is_function and i.name != name and name in i.identifiers()]


def explain_missing_functions(output: str, ch: Chapter) -> list[str]:
    """One sentence per function the link (or, for device code, ptxas) could not find that
    the learner declared or must define: a function of the chapter's API that exercise.cu
    does not define (or defines with another signature), or one exercise.cu declares and
    calls but never defines. [] when the failure is something else."""
    mine = _exercise_items(ch)
    rel = ch.exercise.name
    out = []
    missing = undefined_references(output) + [(demangle(m.group("sym")), "")
                                              for m in map(_PTXAS_UNRESOLVED.search, output.splitlines()) if m]
    for symbol, user in missing:
        name = function_name(symbol)
        if not name:
            continue
        decl = _declared_not_defined(mine, name)
        if decl is not None:
            users = _users(mine, name)
            who = (f"; {users[0].name} ({rel}:{users[0].line}) calls it" if users
                   else f"; {user} calls it" if user else "")
            out.append(f"`{symbol}` is declared but not defined in {rel} ({rel}:{decl.line}){who}: "
                       f"write its body, or call a function that exists")
            continue
        header = declaring_header(ch.folder, name)
        if header is None:
            continue
        text = f"your {rel} does not define `{symbol}` (declared in {header.name})"
        same_name = [i for i in mine if i.is_function and i.name == name]
        if same_name:
            text += (f": the {name} at {rel}:{same_name[0].line} has another signature; "
                     f"make it match {header.name}")
        out.append(text)
    return out


def _without_noise(output: str, limit: int = MAX_ERROR_LINES) -> list[str]:
    """A log's last lines without the build tool's own (commands, progress, Ninja's
    summary) and without temporary file names."""
    kept = [re.sub(r"\S*tmpxft_\S*?:", "", l).rstrip() for l in output.splitlines()
            if l.strip() and not _NOISE.match(l.strip())]
    return kept[-limit:]


def _is_link_failure(output: str) -> bool:
    return bool(_UNDEFINED.search(output) or "ld returned" in output or "multiple definition" in output)


def report_build_failure(err, ch: Optional[Chapter], stream=None) -> None:
    """Shows the compile or link error first and short, then where the whole log is. With
    ch, the learner's file is the one to look at; without (the solution), any file."""
    stream = stream or sys.stdout
    missing = explain_missing_functions(err.output, ch) if ch is not None else []
    device = _PTXAS_UNRESOLVED.search(err.output) is not None
    link = _is_link_failure(err.output) and not device
    if missing:
        what = ("does not compile: its device code calls a function that is never defined" if device
                else "does not link (it compiled; a function it needs is not defined)")
        say(paint(f"your {ch.exercise_rel} {what}:", "red", stream), stream)
        lines = missing
    elif link or device:
        name = f"your {ch.exercise_rel}" if ch is not None else err.target
        say(paint(f"{name} {'does not link' if link else 'does not compile'}:", "red", stream), stream)
        # The linker's other lines (a multiple definition...), then each missing symbol once.
        lines = [l for l in _without_noise(err.output) if not (_UNDEFINED.search(l) or _LINK_CONTEXT.search(l))]
        lines += [f"undefined: `{sym}`" + (f", used by `{user}`" if user else "")
                  for sym, user in undefined_references(err.output)]
    else:
        exercise_rel = ch.exercise_rel if ch is not None else None
        lines = extract_compile_errors(err.output, exercise_rel)
        mine = exercise_rel is not None and any(l.startswith(exercise_rel + ":") for l in lines)
        what = f"your {exercise_rel}" if mine else err.target
        say(paint(f"{what} does not compile:", "red", stream), stream)
        lines = [l for l in lines if not _NOISE.match(l.strip())]
    for line in lines:
        say("  " + line, stream)
    say(f"full log: {display_path(err.log)}", stream)
