// The SASS (machine code) of the kernels in a binary, through cuobjdump: what the compiler
// really emitted for a kernel — 128-bit loads (LDG.E.128), spills (STL/LDL), asynchronous
// copies (LDGSTS) — so a test can check the mechanism in the learner's own kernel. Checks
// look at one kernel by name, so a helper kernel in the same binary cannot satisfy them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cml::sass {

// A kernel's line of cuobjdump -res-usage (REG:47 STACK:0 SHARED:0 LOCAL:0): -1 when absent.
struct Resources {
  int registers = -1, stack = -1, shared = -1, local = -1;
};

struct Function {
  std::string mangled;                    // as cuobjdump prints it
  std::string name;                       // demangled where possible
  int arch = 0;                           // the architecture of the code it is part of: 90 for sm_90 (0: not said)
  std::vector<std::string> opcodes;       // one per instruction, with modifiers: "LDG.E.128.CONSTANT"
  std::vector<std::string> instructions;  // the same, whole: "LDC.64 R12, c[0x3][R24+0x8]"
  Resources resources;                    // filled by dump(), not by parse()
  std::vector<long long> offsets;         // each instruction's byte offset (/*0a40*/); empty: 16 apart
};

// Every function in cuobjdump -sass output, of every architecture the binary holds code
// for (a build for several GPUs has one copy of each kernel per architecture, each after a
// line `arch = sm_NN`). Pure text processing, tested on the CPU.
std::vector<Function> parse(const std::string& cuobjdump_sass);

// Sets each function's resources from cuobjdump -res-usage output (the entry of its name
// and architecture).
void add_resources(std::vector<Function>& functions, const std::string& cuobjdump_res_usage);

// The first function whose demangled or mangled name contains `fragment`, of architecture
// `arch` (0: of any).
std::optional<Function> find(const std::vector<Function>& functions, const std::string& fragment, int arch = 0);

// The architectures the functions are of, ascending.
std::vector<int> architectures(const std::vector<Function>& functions);

// The architecture whose code a GPU of compute capability `cc` (90 for 9.0) runs from these:
// `cc` itself, else the newest of the same major version below it; 0 when there is none
// (the GPU would compile the PTX instead, and no SASS here is what it runs).
int architecture_run_by(const std::vector<Function>& functions, int cc);

// How many instructions start with `prefix`, a whole opcode or a dotted part of one:
// "LDG.E.128" counts LDG.E.128.CONSTANT too, "LDG" counts LDG.E but not LDGSTS. Turing's
// .U part is left out first ("LDS.128" counts sm_75's LDS.U.128).
std::size_t count(const Function& f, const std::string& prefix);

// How many whole instructions contain `text` (an operand: "c[0x3][R" is a constant-bank
// read at a per-thread register offset).
std::size_t count_containing(const Function& f, const std::string& text);

// The first whole instruction that contains `text`, or "".
std::string first_containing(const Function& f, const std::string& text);

// Calls of a subroutine (a CALL whose target reaches a RET before any EXIT) made inside a
// loop (between a backward branch and its target): where nvcc calls its routine for a
// 64-bit division or remainder by a run-time value, once per trip. A call before the loop
// (once per thread) does not count, and neither does the bare CALL ptxas uses as a loop
// exit on sm_80 (its target ends in EXIT, not RET).
std::size_t subroutine_calls_in_loops(const Function& f);

// The pattern that counts subroutine_calls_in_loops() in a SASS check ('lacks': ...).
inline constexpr const char* kCallInLoop = "subroutine call in a loop";

// What a SASS check's pattern counts: kCallInLoop by subroutine_calls_in_loops(), an opcode
// (letters, digits, '_' and '.') by count(), anything else (operands) by count_containing().
std::size_t count_pattern(const Function& f, const std::string& pattern);

// An instruction that count_pattern() counted ("" when none): the first CALL of a
// subroutine in a loop for kCallInLoop, else the first that contains the pattern.
std::string example_of(const Function& f, const std::string& pattern);

// cuobjdump (which needs nvdisasm beside it or on PATH): PATH, $CUDA_HOME/bin,
// /usr/local/cuda/bin, or the pip package nvidia-cuda-cuobjdump in the repository's .venv.
std::optional<std::string> find_cuobjdump();

// cuobjdump -res-usage -sass of `binary`, parsed. The text is kept beside the binary
// (BINARY.sass), so every check of one build of a binary runs cuobjdump once, even when
// several processes ask at the same time. Throws cml::Skip when cuobjdump cannot be found
// or run, with the reason.
std::vector<Function> dump(const std::string& binary);

// A kernel's PTX as the binary embeds it (a build for compute_NN keeps the PTX beside the
// SASS): the instructions the source asked for, before ptxas. Where a check must see an
// instruction the SASS does not show — fence.mbarrier_init.release.cluster compiles to no
// instruction of its own in a launch without clusters.
struct PtxEntry {
  std::string mangled;  // the .entry's name
  std::string name;     // demangled where possible
  int arch = 0;         // the `arch = sm_NN` it was listed under
  std::string text;     // from `.entry` to the next entry
};

// Every entry of cuobjdump -ptx output. Pure text processing, tested on the CPU.
std::vector<PtxEntry> parse_ptx(const std::string& cuobjdump_ptx);

// cuobjdump -ptx of `binary`, parsed; cached beside it (BINARY.ptx) as dump() caches the SASS.
// Throws cml::Skip as dump() does.
std::vector<PtxEntry> dump_ptx(const std::string& binary);

// Whether the first mbarrier.init of `entry` is followed, later in the entry, by a fence that
// makes it visible to the asynchronous proxy (fence.proxy.async, or the lighter
// fence.mbarrier_init): what the PTX memory model asks before a bulk or tensor copy completes
// on that barrier. True for an entry with no mbarrier.init.
bool mbarrier_init_fenced(const PtxEntry& entry);

// Whether every plain mbarrier.arrive of `entry` (not an arrive.expect_tx) has a warp or block
// barrier (bar.warp.sync, bar.sync, barrier.sync) between it and the shared-memory load before
// it: where one lane arrives for its warp, the lanes must have met after their reads, or the
// arrival can say the stage is free while a lane still reads it. True with no such arrival.
bool mbarrier_arrivals_after_sync(const PtxEntry& entry);

// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

// Of a build for several architectures, the functions of the one the current device runs
// (architecture_run_by its compute capability; none when it runs none of them): what a
// check of "the kernel that ran" must look at. The functions as they are for one architecture.
std::vector<Function> run_by_current_device(const std::vector<Function>& functions);

// The running program's own functions, as the current device runs them
// (run_by_current_device(dump(self_executable()))), read once per process: for
// a program that prints what the compiler made of its kernels beside what they did. nullptr,
// with the reason in `why`, when cuobjdump cannot be found or run (the program goes on
// without that column; a check of the code belongs to the tests).
const std::vector<Function>* own_code(std::string& why);

}  // namespace cml::sass
