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
        repeats: dict = {}        # (learner's line, callee) -> [index in picked, more errors, where]
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
                moved = _expanded_in_exercise(lines, j, exercise_rel, m.group("rest"), root)
                if not moved:
                    site = _called_from_exercise(lines, i, exercise_rel, root)
                    if site in repeats:           # one more error of one call: counted, not shown
                        repeats[site][1] += 1
                    elif site is not None:
                        repeats[site] = [len(picked), 0, f"{path}:{line_no}"]
                        moved = _inside_a_call(site, m.group("rest"), lines[i + 1:j], exercise_rel, root)
                picked += moved
            i = j
        for at, more, where in repeats.values():   # the (inside ...) line of each call's first error
            picked[at + 1] = (f"    (inside {_callee_text(picked[at + 1])}, which this line calls: {where}"
                              + (f"; {more} more error{'s' if more != 1 else ''} there" if more else "") + ")")
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


# An error inside a header's template (std::sort on a std::map fails in stl_algo.h) is
# shown at the learner's line that called into it. nvcc lists the instantiations after the
# error, innermost first (`detected during: instantiation of "void std::sort(...)" at line 99
# of ../chapters/09_sgemm/exercise.cu`); gcc before it, outermost last (`In instantiation of
# 'F':`, `path:N:C:   required from 'G'`, `../chapters/.../exercise.cu:99:12:   required from here`).
_NVCC_INSTANTIATED = re.compile(r'instantiation of "(?P<what>.*)" at line (?P<line>\d+) of (?P<path>\S+?)\s*$')
_GCC_REQUIRED = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):(?:\d+:)?\s+required from (?P<what>.*?)\s*$")
_GCC_INSTANTIATION = re.compile(r"In instantiation of (?P<what>.*?):?\s*$")
_GCC_EXCERPT = re.compile(r"^\s*\d*\s*\|")
_QUOTES = "\"'`‘’"


def function_of_signature(signature: str) -> str:
    """`std::sort` from `void std::sort(_RAIter, _RAIter) [with _RAIter=...]`, and
    `std::vector<_Tp, _Alloc>::push_back` from its signature: the name before the parameters."""
    head = signature.strip(_QUOTES + " ").split(" [with ", 1)[0]
    # An operator's own < > ( ) (operator<, operator->, operator()) are no brackets.
    op = re.search(r"\boperator\s*(\(\)|[^\w\s(]+)", head)
    if op:
        head = head[:op.start()] + "\0" + head[op.end():]
    depth, end = 0, len(head)
    for k, c in enumerate(head):          # the parameter list: the first '(' outside <...>
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            end = k
            break
    head, depth, name = head[:end].strip(), 0, None
    for k in range(len(head) - 1, -1, -1):   # the return type ends at the last space outside <...>
        depth += (head[k] == ">") - (head[k] == "<")
        if head[k] == " " and depth == 0:
            name = head[k + 1:]
            break
    name = head if name is None else name
    return name.replace("\0", op.group(0)) if op else name


def _called_from_exercise(lines: list, i: int, exercise_rel: str, root: Path):
    """(line, callee) of the learner's line that led to the error at lines[i], in another
    file: their innermost line in the instantiation chain (where their code called into the
    header); None when the chain does not pass through their file."""
    for line in lines[i + 1:]:                                # nvcc: after the error (and its notes)
        m = _DIAG.match(line.strip())
        if m and m.group("kind").endswith("error"):
            break
        n = _NVCC_INSTANTIATED.search(line)
        if n and short_source_path(n.group("path"), root) == exercise_rel:
            return int(n.group("line")), function_of_signature(n.group("what"))
    start = i                                                 # gcc: before it, back to its chain's start
    while start > 0 and i - start < 60:
        prev = lines[start - 1]
        m = _DIAG.match(prev.strip())
        if m and m.group("kind").endswith("error"):
            break
        start -= 1
        if _GCC_INSTANTIATION.search(prev):
            break
    callee = ""
    for line in lines[start:i]:
        inst, req = _GCC_INSTANTIATION.search(line), _GCC_REQUIRED.match(line.strip())
        if req and short_source_path(req.group("path"), root) == exercise_rel:
            return int(req.group("line")), callee
        if inst or req:
            callee = function_of_signature((inst or req).group("what"))
    return None


def _callee_text(line: str) -> str:
    """The callee written in an `(inside F, ...)` line."""
    return line.strip()[len("(inside "):].split(", which this line calls", 1)[0]


def _inside_a_call(site: tuple, message: str, body: list, exercise_rel: str, root: Path) -> list[str]:
    """An error inside a header shown at the learner's line: `their path:line: error: ...`,
    the line that names the callee and the header's place (filled in by collect), the
    error's details (argument or operand types), the learner's line with a caret under the
    name of the function it calls."""
    line_no, callee = site
    details = []
    for text in body:                     # the details: indented deeper than the echoed line
        if text.strip() == "^" or text.strip().startswith(("detected during", "instantiation of")):
            break
        if not _GCC_EXCERPT.match(text):  # gcc echoes the header's line as ` 1938 | ...`
            details.append(text)
    details = [d.strip() for d in details[:-1]] if len(details) > 1 else []
    shown = [f"{exercise_rel}:{line_no}: {message}", f"    (inside {callee or 'a function it calls'}, "
             "which this line calls)"] + ["    " + d for d in details]
    real = _source_line(root, exercise_rel, line_no)
    if real is not None:
        shown.append("  " + real.rstrip())
        name = callee.rsplit("::", 1)[-1].split("<", 1)[0]
        at = re.search(rf"\b{re.escape(name)}\s*[<(]", real) if name else None
        if at:
            shown.append(" " * (2 + at.start()) + "^")
    return shown


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


# The types a demangled symbol (or a host compiler) spells by what they stand for, and the
# names a learner writes: the runtime's handles are pointers to the driver's structs.
_AS_WRITTEN = [(re.compile(rf"\b{struct}\s*\*"), name) for struct, name in (
    ("CUstream_st", "cudaStream_t"), ("CUevent_st", "cudaEvent_t"), ("CUgraph_st", "cudaGraph_t"),
    ("CUgraphExec_st", "cudaGraphExec_t"), ("CUgraphNode_st", "cudaGraphNode_t"),
    ("CUfunc_st", "cudaFunction_t"), ("CUkern_st", "cudaKernel_t"), ("CUlib_st", "cudaLibrary_t"),
    ("CUmemPoolHandle_st", "cudaMemPool_t"), ("CUuserObject_st", "cudaUserObject_t"),
    ("CUexternalMemory_st", "cudaExternalMemory_t"), ("CUexternalSemaphore_st", "cudaExternalSemaphore_t"),
    ("cudaArray", "cudaArray_t"), ("cudaMipmappedArray", "cudaMipmappedArray_t"),
    ("cudaGraphicsResource", "cudaGraphicsResource_t"))] + [
    (re.compile(r"\bCUtensorMap_st\b"), "CUtensorMap"), (re.compile(r"\bcudaError\b(?!_t)"), "cudaError_t"),
    (re.compile(r"\bstd::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> ?>"),
     "std::string"),
    # and `const float*` as written, where the demangler puts the const after the type
    (re.compile(r"(?<![\w:<>])((?:(?:unsigned|signed|long|short) )*[A-Za-z_][\w:]*) const(?=\s*[*&])"), r"const \1")]


_DIAG_SHOWN = re.compile(r"^\S+:\d+(?::\d+)?: ")     # a diagnostic as extract_compile_errors shows it


def as_the_learner_wrote(text: str) -> str:
    """`ch05::transpose_tiled(float const*, float*, int, int, cudaStream_t)` where the linker
    wrote `CUstream_st*`: the types by the names used in the learner's file."""
    for pattern, name in _AS_WRITTEN:
        text = pattern.sub(name, text)
    return text


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
        # Types by the learner's names in what the tools wrote, never in an echo of their code.
        translate = missing or link or device or _DIAG_SHOWN.match(line)
        say("  " + (as_the_learner_wrote(line) if translate else line), stream)
    say(f"full log: {display_path(err.log)}", stream)
