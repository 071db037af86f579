#!/usr/bin/env python3
"""Maintainer check: the tests catch the mistakes the chapters teach about.

Each mutant is the solution with one known mistake put back in (work on the NULL stream,
a synchronising call in the loop, pageable buffers...). For each, this script builds the
chapter's learner test executable from a COPY of the sources whose exercise.cu is the
mutant (build-mutants/src, configured as build-mutants/build), runs the named step's tests
and requires that they FAIL with a message naming the mistake. The learner's own
chapters/NN_topic/exercise.cu is never written, so a run killed half-way leaves it as it
was; the copy is brought up to date with the checkout at the start of every run.

Watchdog mutants (a kernel that never ends, an illegal address) run the WHOLE executable,
as ./lab check does: the named step must fail with the supervisor's message (see
tests/runner/supervisor.hpp) and the other steps must still report. Needs a GPU.

    python3 tools/mutants.py                  # every chapter's mutants
    python3 tools/mutants.py 04               # one chapter's (02, 2 or 02_streams)
    python3 tools/mutants.py 04 --only hang   # the mutants of chapter 04 whose name has "hang"
    python3 tools/mutants.py --list           # what there is, without building anything
    python3 tools/mutants.py --dry            # that every mutant still applies to its solution (no GPU, no build)
    python3 tools/mutants.py --parse          # ...and gets through the CUDA front end (no GPU; a configured build/)
    python3 tools/mutants.py 08 --shard 2/3   # the 2nd, 5th, 8th... of chapter 08's (three copies share them)
    python3 tools/mutants.py --jobs 8         # every mutant, eight shards at once (build-mutants-1..8/)
    python3 tools/mutants.py 09 --only "wait_group 0" --measure "[.measure]"   # a mistake's side of a speed bar
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shlex
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build-mutants"          # ignored by git, like every build-*/ folder
COPY = WORK / "src"
BUILD = WORK / "build"


from mutant_cases import load  # tools/ is on sys.path when this runs as a script

MUTANTS = load()




def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def meson_program():
    """The Meson ./lab set up (.venv), else the system's."""
    venv = ROOT / ".venv" / "bin" / "meson"
    return str(venv) if venv.exists() else (shutil.which("meson") or "meson")


def source_files():
    """The checkout's files as git sees them (tracked, and new ones not ignored)."""
    out = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"])
    if out.returncode != 0:
        raise SystemExit(f"git ls-files failed: {out.stderr.strip()}")
    return [f for f in out.stdout.split("\0") if f and (ROOT / f).is_file()]


def sync_copy():
    """Brings build-mutants/src up to date with the checkout. A file is written only when
    its content differs, so ninja rebuilds only what changed (the mutant's exercise.cu)."""
    wanted = set()
    for rel in source_files():
        wanted.add(rel)
        src, dst = ROOT / rel, COPY / rel
        data = src.read_bytes()
        if not dst.exists() or dst.read_bytes() != data:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
            shutil.copymode(src, dst)
    for path in sorted(COPY.rglob("*"), reverse=True):   # files deleted from the checkout
        rel = path.relative_to(COPY).as_posix()
        if path.is_file() and rel not in wanted:
            path.unlink()


def configure(meson):
    """Configures build-mutants/build from the copy; a later run reconfigures it, so that a
    chapter listed since (chapters.txt, which Meson reads) has its targets."""
    if (BUILD / "build.ninja").exists():
        cmd = [meson, "setup", "--reconfigure", str(BUILD), str(COPY)]
    else:
        cmd = [meson, "setup", "--buildtype=release", str(BUILD), str(COPY)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else r.stdout + r.stderr


def write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


# C++ as tokens for matching an edit: a string or character literal, a word, or one other
# character; comments and white space are what lies between tokens.
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|\w+|[^\w\s]')
_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)
_GAP = r'(?:\s|//[^\n]*|/\*.*?\*/)*'


def code_tokens(text):
    """The tokens of `text` with its comments left out (a // inside a string stays)."""
    tokens, at = [], 0
    while at < len(text):
        comment = _COMMENT.match(text, at)
        if comment:
            at = comment.end()
            continue
        token = _TOKEN.match(text, at)
        if token:
            tokens.append(token.group(0))
            at = token.end()
        else:
            at += 1  # white space
    return tokens


def find_edit(text, old):
    """Where `old` stands in `text`: (start, end), or None. Letter for letter first; else token
    for token, whatever white space, line breaks and comments lie between the tokens, so that
    reformatting or re-commenting a solution does not orphan its mutants."""
    at = text.find(old)
    if at >= 0:
        return at, at + len(old)
    tokens = code_tokens(old)
    if not tokens:
        return None
    match = re.search(_GAP.join(re.escape(t) for t in tokens), text, re.S)
    return (match.start(), match.end()) if match else None


def apply(solution, edits):
    """The solution with the mutant's edits, or the first edit whose text is gone."""
    text = solution
    for old, new in edits:
        where = find_edit(text, old)
        if where is None:
            return None, old
        start, end = where
        if text[start:end] != old:  # matched by tokens: keep the solution's own indentation
            new = new.strip("\n") if old.strip("\n") != old else new
            new = new.lstrip(" ")
        text = text[:start] + new + text[end:]
    return text, None


def folded(text):
    """Catch2 wraps long messages over several lines, even inside a number ("0." / "7"):
    compare with all white space removed."""
    return "".join(text.split())


def report_cases(xml_text):
    """(name, step, failure text or None) of each <testcase> of a JUnit report."""
    cases = []
    for tc in ET.fromstring(xml_text).iter("testcase"):
        name = tc.get("name", "")
        m = re.match(r"\s*step\s+(\d+)", name)
        bad = [el for el in tc if el.tag in ("failure", "error")]
        text = " ".join((el.text or "") + " " + el.get("message", "") for el in bad) if bad else None
        skipped = tc.find("skipped") is not None or "SKIP:" in "".join(
            (el.text or "") for el in tc if el.tag in ("system-err", "system-out"))
        cases.append((name, int(m.group(1)) if m else None, text, skipped))
    return cases


def judge_whole(mutant, rc, xml_text):
    """A watchdog mutant is caught when its step fails with the supervisor's message, and
    the other steps still report (one of them passes): (caught, why not)."""
    if rc != 1:
        return False, f"exit {rc}, not 1"
    try:
        cases = report_cases(xml_text)
    except ET.ParseError as e:
        return False, f"the merged JUnit report is not valid XML ({e})"
    hits = [c for c in cases if c[1] == mutant.step and c[2] and folded(mutant.expect) in folded(c[2])]
    if not hits:
        return False, f"no case of step {mutant.step} failed with {mutant.expect!r}"
    others = [c for c in cases if c[1] != mutant.step]
    if not any(c[2] is None and not c[3] for c in others):
        return False, "no case of another step passed: the others did not survive the mistake"
    return True, f"{len(cases)} cases reported, {sum(1 for c in others if c[2] is None and not c[3])} of other steps passed"


def check_mutant(chapter, mutant, solution, meson, args):
    num = chapter.split("_")[0]
    text, missing = apply(solution, mutant.edits)
    if text is None:
        print(f"ch{num} {mutant.name}: the solution no longer contains the text to mutate: {missing[:60]!r}")
        return False
    # A mutant stands for a learner's file: without the solution's marker symbol, which the
    # tests refuse in a learner's build (integrity.hpp) before they check anything
    # else, except in the mutants that copy the solution to see that refusal.
    if not mutant.keeps_marker:
        text = re.sub(r'^extern "C" const int cml_ch\d+_solution_tu = 1;\n', "", text, flags=re.M)
    write_if_changed(COPY / "chapters" / chapter / "exercise.cu", text)
    build = subprocess.run([meson, "compile", "-C", str(BUILD), f"test_ch{num}_learner"],
                           capture_output=True, text=True)
    if mutant.compile_error:  # the mistake must stop the build, with the words that name it
        caught = build.returncode != 0 and folded(mutant.expect) in folded(build.stdout + build.stderr)
        print(f"ch{num} {mutant.name}: {'caught' if caught else 'NOT CAUGHT'} by the build")
        if not caught:
            print((build.stdout + build.stderr)[-3000:])
        return caught
    if build.returncode != 0:
        print(f"ch{num} {mutant.name}: the mutant does not compile:\n{build.stdout[-2000:]}")
        return False
    exe = BUILD / "tests" / f"test_ch{num}_learner"
    env = dict(os.environ, CML_CASE_TIMEOUT=str(args.case_timeout))
    for name in ("CML_ISOLATE", "CML_TESTS"):  # the watchdog and every case, as ./lab check runs them
        env.pop(name, None)
    if args.measure:  # the mistake's side of a speed bar: its timings, not a verdict
        result = subprocess.run([str(exe), args.measure], capture_output=True, text=True, env=env,
                                timeout=args.run_timeout)
        print(f"ch{num} {mutant.name}: {args.measure} (exit {result.returncode})")
        print(result.stdout + result.stderr, flush=True)
        return result.returncode == 0
    if mutant.whole:
        with tempfile.TemporaryDirectory() as tmp:
            xml = Path(tmp) / "report.xml"
            try:
                result = subprocess.run([str(exe), "-r", "junit", "-o", str(xml)], capture_output=True,
                                        text=True, env=env, timeout=args.run_timeout)
            except subprocess.TimeoutExpired:
                print(f"ch{num} {mutant.name}: NOT CAUGHT: the executable ran past {args.run_timeout} s")
                return False
            xml_text = xml.read_text(errors="replace") if xml.exists() else "<missing/>"
        out = result.stdout + result.stderr
        caught, why = judge_whole(mutant, result.returncode, xml_text)
    else:
        try:
            # Hidden cases ([.measure], the maintainer's timings) carry step tags too, and Catch2
            # runs a hidden case that a tag names: "~[.]" keeps a mutant's run to what ./lab check runs.
            spec = mutant.tag if "[." in mutant.tag else mutant.tag + "~[.]"
            result = subprocess.run([str(exe), spec], capture_output=True, text=True, env=env,
                                    timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            print(f"ch{num} {mutant.name}: NOT CAUGHT: ran past {args.run_timeout} s")
            return False
        out = result.stdout + result.stderr
        caught = result.returncode == 1 and folded(mutant.expect) in folded(out)
        why = f"exit {result.returncode}"
    if result.returncode == 77:   # no GPU, or not the feature: nothing was shown either way
        reason = [line for line in out.splitlines() if line.startswith("SKIP:")][-1:] or ["exit 77"]
        print(f"ch{num} {mutant.name}: skipped ({reason[0]})")
        return None
    print(f"ch{num} {mutant.name}: {'caught' if caught else 'NOT CAUGHT'} by {mutant.tag} ({why})")
    if not caught:
        print(out[-3000:])
    return caught


def dry_run(plan):
    """--dry: every mutant's edits apply to its solution as it stands (a solution edited
    since a mutant was written leaves the mutant testing nothing): 0, or 1 naming each."""
    stale = 0
    for chapter, mutant in plan:
        solution = (ROOT / "solutions" / chapter / "exercise.cu").read_text()
        text, missing = apply(solution, mutant.edits)
        if text is None:
            stale += 1
            print(f"ch{chapter[:2]} {mutant.name}: the solution no longer contains the text to mutate: {missing[:60]!r}")
        elif text == solution:
            stale += 1
            print(f"ch{chapter[:2]} {mutant.name}: its edits leave the solution as it is")
    print(f"{len(plan) - stale} of {len(plan)} mutants apply to their solutions")
    return 1 if stale else 0


def front_end_command(build, chapter):
    """The learner build's command for chapter's exercise.cu (build/compile_commands.json),
    made a front-end pass: `nvcc -cuda` parses host and device code and writes the host
    translation, no SASS. Returns (arguments before the source, directory) or None."""
    try:
        entries = json.loads((build / "compile_commands.json").read_text())
    except (OSError, ValueError):
        return None
    learner = f"chapters/{chapter}/exercise.cu"
    for e in entries:
        if e["file"].endswith(learner) and "learner" in e.get("output", e["command"]):
            args, out, skip = [], [], 0
            for a in shlex.split(e["command"]):
                if skip:
                    skip -= 1
                elif a in ("-MD",):
                    continue
                elif a in ("-MT", "-MF", "-o"):
                    skip = 1
                elif a == "-c" or a.endswith(learner):
                    continue
                else:
                    args.append(a)
            # One architecture (the newest the build has: every feature switch on) and no
            # device optimisation: a syntax or type error shows as well, in a fifth of the time.
            gencodes = [a for a in args if a.startswith("-gencode")]
            newest = max(gencodes, key=lambda a: int(re.search(r"compute_(\d+)", a).group(1)), default=None)
            args = [a for a in args if not a.startswith("-gencode") or a == newest]
            return args + ["-I", str(ROOT / "chapters" / chapter), "-cuda", "-Xcicc", "-O0"], e["directory"]
    return None


def parse_run(plan, build, jobs):
    """--parse: every mutant's exercise.cu through the CUDA front end with the learner build's
    flags (no GPU). A mutant whose edits break the syntax is reported on the GPU as "does not
    compile", testing nothing; found here it costs seconds. compile_error mutants must fail,
    with the words they expect where the front end prints them. Mutants already parsed with
    the same text and command are remembered in build/mutants-parsed.txt."""
    memo_path = build / "mutants-parsed.txt"
    memo = set(memo_path.read_text().split()) if memo_path.exists() else set()
    try:
        nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        print("nvcc not found: the mutants cannot be parsed here")
        return 77
    # What else a parse reads: the chapter's and common/'s headers, and the compiler.
    around = hashlib.sha256(nvcc.encode())
    for chapter in sorted({c for c, _ in plan}):
        for path in sorted((ROOT / "chapters" / chapter).rglob("*")) + sorted((ROOT / "common" / "cml").rglob("*")):
            if path.is_file() and path.suffix in (".cuh", ".hpp", ".h"):
                around.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    todo, bad, commands = [], 0, {}
    for chapter, mutant in plan:
        if chapter not in commands:
            commands[chapter] = front_end_command(build, chapter)
        found = commands[chapter]
        if found is None:
            print(f"no learner compile command for chapter {chapter[:2]} in {build}/compile_commands.json: "
                  "configure the build first (./lab setup)")
            return 77
        text, missing = apply((ROOT / "solutions" / chapter / "exercise.cu").read_text(), mutant.edits)
        if text is None:
            print(f"ch{chapter[:2]} {mutant.name}: does not apply ({missing[:60]!r}): see --dry")
            bad += 1
            continue
        key = hashlib.sha256((around.hexdigest() + " ".join(found[0]) + "\0" + text).encode()).hexdigest()
        if key not in memo:
            todo.append((chapter, mutant, text, found, key))

    def parse(item):
        chapter, mutant, text, (args, directory), key = item
        with tempfile.TemporaryDirectory(prefix="cml-parse-") as tmp:
            src = Path(tmp) / "exercise.cu"
            src.write_text(text)
            r = subprocess.run(args + [str(src), "-o", str(Path(tmp) / "exercise.ii")], cwd=directory,
                               capture_output=True, text=True)
        return item, r.returncode, r.stdout + r.stderr

    done = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for (chapter, mutant, _, _, key), rc, out in pool.map(parse, todo):
            errors = [line for line in out.splitlines() if "error" in line]
            if mutant.compile_error:
                # rc 0 passes too: a mistake ptxas stops (no front-end error) shows only in the
                # real build, where mutants.py checks its words on the GPU machine.
                if rc == 0 or folded(mutant.expect) in folded(out):
                    done.append(key)
                else:
                    bad += 1
                    print(f"ch{chapter[:2]} {mutant.name}: fails to parse, but not with {mutant.expect!r}:")
                    print("  " + "\n  ".join(errors[:4]))
            elif rc != 0:
                bad += 1
                print(f"ch{chapter[:2]} {mutant.name}: does not compile, so it tests nothing:")
                print("  " + "\n  ".join(errors[:4] or out.splitlines()[-4:]))
            else:
                done.append(key)
    if done:
        with open(memo_path, "a") as f:
            f.write("".join(k + "\n" for k in done))
    print(f"{len(plan) - bad} of {len(plan)} mutants get through the front end "
          f"({len(todo)} parsed now, the rest remembered)")
    return 1 if bad else 0


def chapter_of(word):
    """The MUTANTS key a command-line word names ("4", "04", "04_coalescing"), or None."""
    for chapter in MUTANTS:
        if word == chapter or (word.isdigit() and chapter.startswith(word.zfill(2) + "_")):
            return chapter
    return None


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/mutants.py",
        description="Puts the mistakes each chapter teaches back into its solution and checks that "
                    "the chapter's tests fail with the message naming each one. Builds from a copy of "
                    "the sources (build-mutants/): the learner's exercise.cu is never written. Needs a GPU.")
    p.add_argument("chapters", nargs="*", metavar="CHAPTER",
                   help="chapters to check: 04, 4 or 04_coalescing (default: every chapter with mutants)")
    p.add_argument("--only", metavar="TEXT",
                   help="only the mutants whose name contains TEXT (several: TEXT|TEXT|...)")
    p.add_argument("--list", action="store_true", help="list the mutants and exit; builds nothing")
    p.add_argument("--dry", action="store_true",
                   help="check that every mutant's edits still apply to its solution, and exit; builds nothing")
    p.add_argument("--parse", action="store_true",
                   help="check that every mutant applies and gets through the CUDA front end (nvcc -cuda, "
                        "the learner build's flags from --build's compile_commands.json), and exit; no GPU")
    p.add_argument("--build", default=str(ROOT / "build"), metavar="DIR",
                   help="the configured build whose commands --parse uses (default: build/)")
    p.add_argument("--shard", metavar="K/N",
                   help="only every N-th mutant of the plan, from the K-th (1 <= K <= N): N copies of "
                        "the checkout, each with its own build-mutants/, share the work")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="run the plan as N shards at once, each in its own build-mutants-K/ (N copies "
                        "and N builds; the shards' tests share the GPU, so speed bars are timed under load)")
    p.add_argument("--measure", metavar="SPEC",
                   help="run each mutant's test executable on the Catch2 test spec SPEC (\"[.measure]\") "
                        "and print what it prints, judging nothing: the taught mistake's side of a speed bar")
    p.add_argument("--work", default="build-mutants", help=argparse.SUPPRESS)  # a shard's folder
    p.add_argument("--case-timeout", type=float, default=60, metavar="S",
                   help="the watchdog's limit per test case, CML_CASE_TIMEOUT (default: 60)")
    p.add_argument("--run-timeout", type=float, default=1800, metavar="S",
                   help="the limit for one run of a test executable (default: 1800)")
    args = p.parse_args(argv)
    chosen = []
    for word in args.chapters:
        chapter = chapter_of(word)
        if chapter is None:
            p.error(f"no mutants for chapter {word!r} (there are some for {', '.join(c[:2] for c in MUTANTS)})")
        chosen.append(chapter)
    args.chosen = chosen or sorted(MUTANTS)
    if args.case_timeout <= 0 or args.run_timeout <= 0:
        p.error("time limits must be above 0 seconds")
    args.shard_k, args.shard_n = 1, 1
    if args.shard is not None:
        m = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            p.error(f"--shard wants K/N with 1 <= K <= N (e.g. 2/3), not {args.shard!r}")
        args.shard_k, args.shard_n = int(m.group(1)), int(m.group(2))
    if args.jobs < 1:
        p.error("--jobs wants 1 or more")
    if args.jobs > 1 and args.shard is not None:
        p.error("--jobs makes its own shards: give one or the other")
    if args.jobs > 1 and args.measure:
        p.error("--measure times the mutants one after the other: no --jobs (shards would share the GPU)")
    return args


VERDICT = re.compile(r"^(ch\d+) .*?: (caught|NOT CAUGHT|skipped|the mutant does not compile|"
                     r"the solution no longer contains)")


def tally_line(tally, line):
    """Counts a mutant's verdict line ("chNN name: caught by ...") into tally[chapter]; a
    mutant that does not build or apply counts as not caught, as its shard does."""
    m = VERDICT.match(line)
    if m:
        counts = tally.setdefault(m.group(1), {"caught": 0, "NOT CAUGHT": 0, "skipped": 0})
        counts[m.group(2) if m.group(2) in counts else "NOT CAUGHT"] += 1


def print_tally(tally):
    """One line a chapter: how many of its mutants were caught, missed and skipped."""
    for chapter in sorted(tally):
        c = tally[chapter]
        total = sum(c.values())
        extra = "".join(f", {c[k]} {k.lower()}" for k in ("NOT CAUGHT", "skipped") if c[k])
        print(f"{chapter}: {c['caught']} of {total} caught{extra}")


def run_jobs(args):
    """--jobs N: this script N times at once, shard K/N in build-mutants-K/, their lines
    passed through as they come; exit as the worst shard's (2 error, 1 missed, 77 skipped)."""
    base = [sys.executable, str(Path(__file__).resolve()), *args.chosen,
            "--case-timeout", str(args.case_timeout), "--run-timeout", str(args.run_timeout)]
    if args.only:
        base += ["--only", args.only]
    env = dict(os.environ, CML_MUTANTS_SET_UP="1")  # ./lab setup ran once, here
    children = [subprocess.Popen(base + ["--shard", f"{k}/{args.jobs}", "--work", f"build-mutants-{k}"],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for k in range(1, args.jobs + 1)]
    lock = threading.Lock()
    tally = {}

    def relay(k, child):
        for line in child.stdout:
            if line.strip() in ("all mutants caught", "") or line.startswith("building the mutants"):
                continue   # said once below
            with lock:
                tally_line(tally, line)
                print(f"[{k}] {line}", end="", flush=True)

    threads = [threading.Thread(target=relay, args=(k, c)) for k, c in enumerate(children, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = [c.wait() for c in children]
    print_tally(tally)
    worst = next((code for code in (2, 1, 77) if code in codes), 0)
    if any(code not in (0, 1, 2, 77) for code in codes):
        worst = 2
    print({0: "all mutants caught", 1: "some mutants not caught (lines above)",
           77: "some mutants skipped (no GPU, or a feature it lacks), the others caught"}.get(
               worst, f"a shard failed to run (exit codes {codes})"))
    return worst


def main(argv):
    global WORK, COPY, BUILD
    args = parse_args(argv)
    WORK = ROOT / args.work
    COPY, BUILD = WORK / "src", WORK / "build"
    wanted = args.only.split("|") if args.only else []
    plan = [(c, m) for c in args.chosen for m in MUTANTS[c] if not wanted or any(w in m.name for w in wanted)]
    if not plan:
        print("no mutant matches", file=sys.stderr)
        return 2
    plan = plan[args.shard_k - 1::args.shard_n]
    if not plan:
        return 0   # a shard with nothing left to do
    if args.dry:
        return dry_run(plan)
    if args.parse:
        return parse_run(plan, Path(args.build), args.jobs if args.jobs > 1 else os.cpu_count() or 1)
    if args.list:
        for chapter, m in plan:
            kind = ("the build" if m.compile_error else
                    "whole executable, watchdog" if m.whole else "its step's tests")
            print(f"ch{chapter[:2]} {m.tag:<22} {m.name}  ({kind}; expects {m.expect!r})")
        return 0
    if not os.environ.get("CML_MUTANTS_SET_UP"):   # a --jobs shard: its parent ran it
        setup = run([str(ROOT / "lab"), "setup"])  # installs Meson and Ninja on a fresh machine
        if setup.returncode != 0:
            print(f"./lab setup failed:\n{setup.stdout}{setup.stderr}", file=sys.stderr)
            return 2
    if args.jobs > 1:
        return run_jobs(args)
    meson = meson_program()
    print(f"building the mutants from a copy of the sources in {WORK.relative_to(ROOT)}/ "
          "(the first build takes a few minutes)", flush=True)
    sync_copy()
    error = configure(meson)
    if error:
        print(f"meson setup of {BUILD} failed:\n{error[-3000:]}", file=sys.stderr)
        return 2
    failures = skipped = 0
    for chapter, mutant in plan:
        solution = (ROOT / "solutions" / chapter / "exercise.cu").read_text()
        verdict = check_mutant(chapter, mutant, solution, meson, args)   # None: skipped
        failures += verdict is False
        skipped += verdict is None
    if failures:
        print(f"{failures} mutant(s) not caught" + (f", {skipped} skipped" if skipped else ""))
        return 1
    if skipped:
        print(f"{skipped} mutant(s) skipped (exit 77: no GPU, or a feature it lacks), the others caught")
        return 77
    print("all mutants caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
