"""The command line: one parser per command, `./lab help COMMAND`, and main()."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from .bench import cmd_bench
from .chapters import load_chapters, resolve_chapter
from .check import cmd_check
from .core import EXIT_OK, EXIT_USAGE, LabError
from .diff import cmd_diff
from .doctor import cmd_doctor
from .hints import cmd_hint
from .profile import cmd_profile
from .reset import cmd_reset
from .run import cmd_run, split_passthrough
from .selftest import SANITIZER_TOOLS, cmd_test
from .table import cmd_next, cmd_table
from .terminal import guard_standard_streams, say
from .toolchain import cmd_setup, parse_gpu_arch
from .watch import cmd_watch


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2 (the course's rule)."""

    def __init__(self, *a, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*a, **kw)

    def error(self, message):
        say(f"{self.prog}: {message} (see {self.prog} --help)", sys.stderr)
        sys.exit(EXIT_USAGE)


CHAPTER_HELP = "the chapter: 01, 1, 01_transfers or transfers"


def _chapter_parser(prog: str, description: str) -> Parser:
    """A parser for a command that takes a chapter."""
    p = Parser(prog=prog, description=description)
    p.add_argument("chapter", metavar="NN", help=CHAPTER_HELP)
    return p


def _positive(text: str) -> int:
    """A count of 1 or more, checked while parsing (a usage error at once)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"want a whole number of 1 or more, not {text!r}")
    return value


def _gpu_arch(text: str) -> str:
    """--gpu-arch's value checked while parsing, so a bad one is a usage error at once."""
    try:
        return parse_gpu_arch(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def build_parsers() -> dict:
    """One parser per command; `./lab COMMAND --help` and `./lab help COMMAND` print it."""
    ps = {}
    p = _chapter_parser("./lab run", "Build chapter NN's program from your exercise.cu and run it. "
                        "Arguments after -- go to the program (./lab run 01 -- --size=64M). "
                        "Its exit code is lab's.")
    p.usage = "./lab run [-h] [--solution] NN [-- ARGS...]"
    p.add_argument("--solution", action="store_true", help="run the reference solution instead")
    ps["run"] = p
    p = _chapter_parser("./lab check", "Run chapter NN's tests against your exercise.cu: each step's "
                        "state, the first failure, and the hint of its step. Without a GPU it "
                        "compiles your file, checks your kernels' compiled code (SASS) and names the "
                        "steps it could not check. Exit 0 passed, 1 a check failed (or it does not "
                        "compile), 77 no GPU and nothing failed.")
    p.add_argument("--verbose", action="store_true", help="also show the test program's own output")
    ps["check"] = p
    ps["watch"] = _chapter_parser("./lab watch", "Check chapter NN again on every save of your "
                                  "exercise.cu (Ctrl-C stops).")
    ps["next"] = Parser(prog="./lab next", description="The first chapter not passed yet, and what to do.")
    p = _chapter_parser("./lab hint", "Show the next hint of chapter NN not shown yet.")
    p.add_argument("--step", type=int, metavar="K", help="the next hint of step K")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--all", action="store_true", help="show all hints (of step K with --step)")
    g.add_argument("--reset", action="store_true", help="start the hints over")
    ps["hint"] = p
    p = _chapter_parser("./lab diff", "Your exercise.cu against the solution (unified diff). It "
                        "spoils the chapter: on a terminal it asks first.")
    p.add_argument("--step", type=int, metavar="K", help="only the functions of step K (those the step table of the chapter's README lists)")
    p.add_argument("--yes", action="store_true", help="do not ask")
    ps["diff"] = p
    p = _chapter_parser("./lab profile", "Your kernels and the solution's, profiled side by side. On the same "
                        "input, under Nsight Compute: the counters chapter NN teaches, and what each difference "
                        "means, the launches, and where a chapter reads them the top reasons its warps stalled; "
                        "for a transfer chapter, both runs' CUPTI traces as timelines, their overlap, "
                        "their gaps and the CUDA calls that kept the host waiting. Each run is saved under .lab/profile/NN/ (JSON and CSV). Exit 0 profiled, "
                        "1 your kernel failed or does not compile, 77 no GPU, no ncu or no counter permission.")
    p.add_argument("--step", type=int, metavar="K", help="only step K (default: every step the chapter profiles)")
    p.add_argument("--solution", action="store_true", help="profile the solution alone (its counters, no comparison)")
    p.add_argument("--compare", metavar="PREVIOUS",
                   help="also compare your counters with a saved run: a .json under .lab/profile/NN/, or last")
    p.add_argument("--record", choices=["starter", "solution", "attempt"],
                   help="maintainers: also keep each step's pair of counter sets as a fixture of the cpu suite "
                        "(tests/cpu/fixtures/profile/), saying whose exercise.cu was profiled (attempt: a "
                        "learner's wrong but running file, such as a mutant of the solution)")
    ps["profile"] = p
    ps["reset"] = _chapter_parser("./lab reset", "Restore the starter exercise.cu from git; your file "
                                  "is first copied to .lab/backups/.")
    ps["doctor"] = Parser(prog="./lab doctor", description="Toolkit, driver, GPU facts, ncu counter "
                          "permission, sanitizer, build tools. Exit 0 when a GPU is usable, else 77.")
    p = _chapter_parser("./lab bench", "Run chapter NN's measurements with --out=DIR (CSV files) and "
                        "plot them with the chapter's plot.py. Arguments after -- go to the program.")
    p.usage = "./lab bench [-h] [--solution] [--out DIR] [--plot-only] NN [-- ARGS...]"
    p.add_argument("--solution", action="store_true", help="measure the reference solution")
    p.add_argument("--out", metavar="DIR", help="where the CSV and PNG files go "
                   "(default bench/NN_name/ in the checkout)")
    p.add_argument("--plot-only", action="store_true", help="do not run: plot the CSVs in DIR")
    ps["bench"] = p
    p = Parser(prog="./lab test", description="The project's self-test: build everything, run the "
               "cpu and solutions suites. The last line is `N passed, N failed, N skipped`.")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--setup", choices=SANITIZER_TOOLS,
                   help="run the solutions under compute-sanitizer (exit 77 without it)")
    g.add_argument("--maintainer", action="store_true",
                   help="also check that every shipped starter fails its tests")
    p.add_argument("--repeat", type=_positive, default=1, metavar="N",
                   help="run every test N times (a verdict that changes between runs is a flaky test)")
    p.add_argument("chapters", metavar="NN", nargs="*",
                   help="only these chapters' GPU tests: their solutions, and with --maintainer their "
                        "starters (default: every chapter, and the cpu suite)")
    ps["test"] = p
    p = Parser(prog="./lab setup", description="Install what is missing (Meson, Ninja, Catch2) and "
               "configure build/. The other commands do this when needed.")
    p.add_argument("--gpu-arch", metavar="LIST", type=_gpu_arch,
                   help="the GPU architectures to build for, e.g. 80,90 (sm_80 and sm_90), or auto "
                   "(the GPU present, else 90); reconfigures build/")
    ps["setup"] = p
    ps["list"] = Parser(prog="./lab list", description="The chapters and your state in each "
                        "(the same as ./lab with no command).")
    ps["help"] = Parser(prog="./lab help", description="All commands, or one command's options.")
    ps["help"].add_argument("topic", metavar="COMMAND", nargs="?", help="the command to explain")
    return ps


def cmd_help(args) -> int:
    """`./lab help` (all commands) or `./lab help COMMAND` (its options)."""
    if not args.topic:
        say(top_help())
        return EXIT_OK
    parsers = build_parsers()
    if args.topic not in parsers:
        raise LabError(f"no command '{args.topic}' (commands: {', '.join(COMMANDS)})", EXIT_USAGE)
    say(parsers[args.topic].format_help().rstrip())
    return EXIT_OK


COMMANDS = {"list": cmd_table, "run": cmd_run, "check": cmd_check, "watch": cmd_watch, "next": cmd_next,
            "hint": cmd_hint, "profile": cmd_profile, "diff": cmd_diff, "reset": cmd_reset, "doctor": cmd_doctor, "bench": cmd_bench,
            "test": cmd_test, "setup": cmd_setup, "help": cmd_help}
PASSTHROUGH = {"run", "bench"}


def summary(description: str) -> str:
    """A command's one line in the list of commands: its description's first sentence."""
    first = description.split(". ", 1)[0].rstrip(".")
    return first[0].lower() + first[1:] if first[:1].isupper() and not first[1:2].isupper() else first


def top_help() -> str:
    """`./lab --help`: every command, one line each."""
    lines = ["usage: ./lab [COMMAND] [ARGS]      (from any folder of the checkout)", "",
             "CUDA Memory Lab: build, run and check the chapters. NN is 01, 1, 01_transfers or transfers.",
             "", "commands:", f"  {'(none)':<8} the chapters and your state in each"]
    parsers = build_parsers()
    lines += [f"  {name:<8} {summary(parsers[name].description)}" for name in COMMANDS]
    lines += ["", "./lab help COMMAND (or ./lab COMMAND --help) shows a command's options.",
              "exit codes: 0 ok, 1 failed check or wrong result, 2 usage error, 77 skipped "
              "(no GPU or a missing feature)"]
    return "\n".join(lines)


def passthrough_command(command: str, own: list, extra: list, args) -> str:
    """The command the learner meant: theirs with the program's arguments after `--`, and
    the chapter as its number (`./lab run 09 -- extra`, not a literal NN)."""
    num = resolve_chapter(args.chapter, load_chapters()).num     # not a chapter: that is the error to show
    kept = list(own)
    for word in extra:
        kept.remove(word)
    kept = [num if word == args.chapter else word for word in kept]
    return " ".join(["./lab", command, *kept, "--", *extra])


def main(argv: Optional[list] = None) -> int:
    """Dispatches to a command; LabError becomes one line on stderr and its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    guard_standard_streams()
    try:
        if not argv:
            return cmd_table(None)
        command, rest = argv[0], argv[1:]
        if command in ("-h", "--help"):
            say(top_help())
            return EXIT_OK
        if command not in COMMANDS:
            what = "option" if command.startswith("-") else "command"
            raise LabError(f"unknown {what} '{command}' (commands: {', '.join(COMMANDS)}; "
                           "./lab --help)", EXIT_USAGE)
        parser = build_parsers()[command]
        own, passthrough = split_passthrough(rest) if command in PASSTHROUGH else (rest, [])
        args, extra = parser.parse_known_args(own)
        if extra:
            tip = f" (program arguments go after --: {passthrough_command(command, own, extra, args)})" \
                if command in PASSTHROUGH else ""
            parser.error(f"unrecognized arguments: {' '.join(extra)}{tip}")
        args.program_args = passthrough
        return COMMANDS[command](args)
    except LabError as e:
        say(f"lab: {e}", sys.stderr)
        return e.code
    except KeyboardInterrupt:
        say("lab: interrupted", sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
