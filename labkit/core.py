"""What every part of lab shares: the exit codes, the checkout's root, and LabError."""

from pathlib import Path

# The course's exit codes, everywhere: programs, tests and ./lab.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77

# The checkout: labkit/ sits at its root, beside ./lab.
ROOT = Path(__file__).resolve().parent.parent

CUDA_DEFAULT_BIN = Path("/usr/local/cuda/bin")   # often not on PATH on a fresh machine
MAX_ERROR_LINES = 20                             # a compile error is shown first and short


class LabError(Exception):
    """A failure the learner should see as one clear line, with the exit code it implies."""

    def __init__(self, message: str, code: int = EXIT_FAIL):
        super().__init__(message)
        self.code = code
