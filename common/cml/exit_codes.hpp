// The exit codes every program, test and ./lab command of the course uses.
#pragma once

namespace cml {

enum ExitCode : int {
  kExitOk = 0,     // ran, and every check passed
  kExitWrong = 1,  // a wrong result, a failed check or a CUDA error
  kExitUsage = 2,  // bad command line: unknown flag, bad number, size that does not fit
  kExitSkip = 77,  // could not run here: no GPU, or the GPU lacks a feature (says which)
};

}  // namespace cml
