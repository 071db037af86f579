"""Every C++ and CUDA source of the repository is as clang-format leaves it (.clang-format at
the root). Versions format differently: the tree is held to clang-format 14 (Debian 12's, the
CI machine's). Exit 77 (skipped), with the reason, where that version is not installed or the
tree is not a git checkout."""
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORMAT_VERSION = "14"


def main():
    tool = shutil.which("clang-format-14") or shutil.which("clang-format")
    if tool is None:
        print("clang-format is not installed here: the format is not checked")
        return 77
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    major = re.search(r"version (\d+)", version)
    if major is None or major.group(1) != FORMAT_VERSION:
        print(f"{tool} is not clang-format {FORMAT_VERSION} ({version.strip()}): versions format differently, "
              "so the format is not checked here")
        return 77
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.cu", "*.cuh", "*.cpp", "*.hpp", "*.h"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        print("not a git checkout: the format is not checked")
        return 77
    files = [str(ROOT / f) for f in listed.stdout.split()]
    out = subprocess.run([tool, "--dry-run", "-Werror", *files], capture_output=True, text=True)
    if out.returncode == 0:
        print(f"{len(files)} sources as clang-format leaves them")
        return 0
    wrong = sorted({line.split(":")[0] for line in out.stderr.splitlines() if ": error:" in line})
    print(f"{len(wrong)} source(s) not formatted: {', '.join(pathlib.Path(w).relative_to(ROOT).as_posix() for w in wrong)}"
          " — run clang-format -i on them (.clang-format at the root)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
