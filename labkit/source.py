"""Just enough C++ reading to find the top-level definitions of an exercise file and the
steps they belong to, with no compiler: what `./lab diff NN --step K` shows (a step's
definitions by the names of the README's step table: step_definitions) and what the
step-table test compares with the README (the TODO(K) marks, below).

The rule for steps, as the exercise files are written: a definition whose own comment
carries `TODO(K):` belongs to step K, and so do the definitions right after it that have
no comment of their own (`free_pinned` after `allocate_pinned`, a kernel's launcher after
the kernel). A `TODO(K):` in a body counts for its definition's group too. A mention
without the colon ("TODO(1) to TODO(4)" in a file header, "TODO(4) is in choose_plan
below") marks nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STEP_MARK = re.compile(r"\bTODO\((\d+)\):")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NAMESPACE_HEAD = re.compile(r'(?:\bnamespace\b[^;{}()]*|\bextern\s+"C"\s*)$')
# Words that may stand before a function's own `(` in a declaration but are not its name.
_NOT_A_NAME = {"__launch_bounds__", "__align__", "alignas", "decltype", "noexcept",
               "__attribute__", "__declspec", "if", "for", "while", "switch", "return"}


@dataclass
class SourceItem:
    """One top-level definition or declaration (inside namespaces) with its own comment."""
    comment: str           # the comment lines right before it
    code: str              # the definition itself
    line: int              # the line (1-based) where `code` starts
    name: str = ""         # the function, type or variable it defines ('' when unclear)
    is_function: bool = False
    steps: set = field(default_factory=set)   # filled in by mark_steps

    @property
    def text(self) -> str:
        return self.comment + self.code

    def identifiers(self) -> set:
        """The names its code uses (comments and strings left out)."""
        return set(_IDENT.findall(strip_comments_and_strings(self.code)))


def strip_comments_and_strings(code: str) -> str:
    """The code with comments removed and string/char literals emptied, lines kept."""
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            out.append("\n" * code.count("\n", i, n if j < 0 else j))
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _skip_literal_or_comment(text: str, i: int) -> int:
    """If a comment or a string/char literal starts at i, the index just past it; else i."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    if text[i] in "\"'":
        q, j = text[i], i + 1
        while j < len(text) and text[j] != q and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def _end_of_line_comment(text: str, i: int) -> int:
    """Past the rest of the line at i when it holds only a comment (`}  // namespace`): a
    comment on the line where something ends belongs to that, not to what follows."""
    m = re.compile(r"[ \t]*(?://[^\n]*)?\n").match(text, i)
    return m.end() if m else i


def top_level_items(text: str) -> list[SourceItem]:
    """The definitions and declarations at namespace level, in file order. Namespaces are
    looked through; preprocessor lines and comments not followed by code are dropped."""
    items: list[SourceItem] = []
    braces: list[str] = []          # 'ns' or 'block' for each open brace
    start, i, n = 0, 0, len(text)

    def at_top() -> bool:
        return all(b == "ns" for b in braces)

    def emit(end: int) -> None:
        item = _make_item(text, start, end)
        if item is not None:
            items.append(item)

    while i < n:
        j = _skip_literal_or_comment(text, i)
        if j != i:
            i = j
            continue
        c = text[i]
        if c == "#" and at_top() and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            while True:                       # a preprocessor line, with its continuations
                e = text.find("\n", i)
                if e < 0 or not text[:e].rstrip().endswith("\\"):
                    break
                i = e + 1
            i = n if e < 0 else e + 1
            start = i
            continue
        if c == "{":
            head = strip_comments_and_strings(text[start:i]).strip()
            if at_top() and _NAMESPACE_HEAD.search(head):
                braces.append("ns")
                start = i + 1
            else:
                braces.append("block")
        elif c == "}" and braces:
            kind = braces.pop()
            if kind == "ns":
                start = i = _end_of_line_comment(text, i + 1)
                continue
            if at_top():
                end = i + 1
                m = re.match(r"\s*;", text[end:])
                if m:
                    end += m.end()
                emit(end)
                start = i = _end_of_line_comment(text, end)
                continue
        elif c == ";" and at_top():
            emit(i + 1)
            start = i = _end_of_line_comment(text, i + 1)
            continue
        i += 1
    return items


def _make_item(text: str, start: int, end: int):
    """Splits [start, end) into its leading comment and its code, and names it."""
    chunk = text[start:end]
    lines = chunk.split("\n")
    k = 0
    in_block = False
    while k < len(lines):                  # leading blank and comment lines
        s = lines[k].strip()
        if in_block:
            in_block = "*/" not in s
        elif s == "" or s.startswith("//"):
            pass
        elif s.startswith("/*"):
            in_block = "*/" not in s[2:]
        else:
            break
        k += 1
    if k == len(lines):
        return None
    comment_lines = lines[:k]
    while comment_lines and comment_lines[0].strip() == "":
        comment_lines.pop(0)
    comment = "\n".join(comment_lines) + ("\n" if comment_lines else "")
    code = "\n".join(lines[k:])
    line = text.count("\n", 0, start) + k + 1
    name, is_function = _name_of(code)
    return SourceItem(comment=comment if comment.strip() else "", code=code, line=line,
                      name=name, is_function=is_function)


def _name_of(code: str) -> tuple[str, bool]:
    """(name, is_function) of a definition: the identifier before its parameter list, a
    struct/class name, or a variable's name."""
    clean = strip_comments_and_strings(code)
    body = clean.find("{")
    head = clean if body < 0 else clean[:body]
    depth = 0
    for m in re.finditer(r"[()]|[A-Za-z_]\w*(?=\s*\()", head):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok not in _NOT_A_NAME:
            return tok, body >= 0
    m = re.search(r"\b(?:struct|class|union|enum(?:\s+class)?)\s+([A-Za-z_]\w*)", head)
    if m:
        return m.group(1), False
    m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=|;|$)", head.strip())
    return (m.group(1), False) if m else ("", False)


def mark_steps(items: list[SourceItem]) -> list[SourceItem]:
    """Gives each item the steps of its group: a commented item opens a group, the items
    after it without a comment join it; the group's `TODO(K):` marks are its steps."""
    groups: list[list[SourceItem]] = []
    for item in items:
        if item.comment or not groups:
            groups.append([])
        groups[-1].append(item)
    for group in groups:
        steps = {int(k) for item in group for k in STEP_MARK.findall(item.text)}
        for item in group:
            item.steps = set(steps)
    return items


def step_items(text: str) -> list[SourceItem]:
    """The top-level items of an exercise file, each with its steps."""
    return mark_steps(top_level_items(text))


def functions_by_step(text: str) -> dict[int, list[str]]:
    """Step K -> the names of the functions its TODO(K) marks, in file order."""
    out: dict[int, list[str]] = {}
    for item in step_items(text):
        if item.is_function:
            for k in sorted(item.steps):
                if item.name not in out.setdefault(k, []):
                    out[k].append(item.name)
    return out


_NOT_DEFINITIONS = {"static_assert", "sizeof", "alignof", "decltype"}   # top-level asserts, misnamed


def step_definitions(items: list[SourceItem], functions: list, other_functions: set) -> list[SourceItem]:
    """A step's definitions in a file, by the names of its row of the README's table (not
    by TODO comments, which learners edit and delete): those functions, and what only they
    use among the file's other definitions, transitively (a constant such as chapter 04's
    kRun, a helper the learner added), leaving out what a function of another step uses too
    (a provided helper several steps call)."""
    by_name: dict = {}
    for item in items:
        if item.name and item.name not in _NOT_DEFINITIONS:
            by_name.setdefault(item.name, []).append(item)
    table = set(functions) | set(other_functions)

    def reach(names) -> set:
        seen, queue = set(), list(names)
        while queue:
            for item in by_name.get(queue.pop(), []):
                for used in item.identifiers() & set(by_name):
                    if used not in seen and used not in table:
                        seen.add(used)
                        queue.append(used)
        return seen
    own = set(functions) | (reach(functions) - reach(set(other_functions) - set(functions)))
    return [i for i in items if i.name in own]
