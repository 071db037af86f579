// The SASS parser against cuobjdump's own output format (a fragment of a real dump).
#include "catch.hpp"

#include "cml/sass.hpp"

namespace {
const char* kSample = R"SASS(
Fatbin elf code:
================
arch = sm_90

	code for sm_90
		Function : _ZN4ch049copy_wideEPK6float4PS0_m
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                              /* 0x00000a00ff017b82 */
                                                                                       /* 0x000ff00000000800 */
        /*0010*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;          /* 0x0000000402047981 */
        /*0020*/              @!P0 BRA 0xc0 ;                                          /* 0x00000000000c8947 */
        /*0030*/                   STG.E.128 desc[UR4][R6.64], R4 ;                    /* 0x0000000406007986 */
        /*0040*/                   EXIT ;                                              /* 0x000000000000794d */
		Function : _ZN4ch048copy_oneEPKfPfm
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;                        /* 0x0000000402047981 */
        /*0010*/               @P1 STG.E desc[UR4][R6.64], R4 ;                        /* 0x0000000406007986 */
        /*0020*/                   EXIT ;
)SASS";
}  // namespace

TEST_CASE("the SASS parser splits functions and reads each instruction's opcode", "[cpu][sass]") {
  const auto fns = cml::sass::parse(kSample);
  REQUIRE(fns.size() == 2);
  CHECK(fns[0].mangled == "_ZN4ch049copy_wideEPK6float4PS0_m");
  CHECK(fns[0].name == "ch04::copy_wide(float4 const*, float4*, unsigned long)");
  CHECK(fns[0].opcodes == std::vector<std::string>{"LDC", "LDG.E.128.CONSTANT", "BRA", "STG.E.128", "EXIT"});
  CHECK(fns[1].opcodes == std::vector<std::string>{"LDG.E", "STG.E", "EXIT"});
}

TEST_CASE("opcode counts match whole modifiers only", "[cpu][sass]") {
  const auto fns = cml::sass::parse(kSample);
  const auto wide = cml::sass::find(fns, "copy_wide");
  REQUIRE(wide);
  CHECK(cml::sass::count(*wide, "LDG.E.128") == 1);
  CHECK(cml::sass::count(*wide, "LDG.E") == 1);
  CHECK(cml::sass::count(*wide, "LDG.E.12") == 0);
  CHECK(cml::sass::count(*wide, "STL") == 0);
  const auto one = cml::sass::find(fns, "copy_one");
  REQUIRE(one);
  CHECK(cml::sass::count(*one, "LDG.E.128") == 0);
  CHECK_FALSE(cml::sass::find(fns, "no_such_kernel"));
}

namespace {
// What one `cuobjdump -res-usage -sass` prints: each kernel's resource line before the
// SASS sections (the SASS parser must not take a resource line for a function).
const char* kResUsageAndSass = R"SASS(
Fatbin elf code:
================
arch = sm_90
Resource usage:
 Common:
  GLOBAL:0
 Function _ZN4ch048copy_oneEPKfPfm:
  REG:14 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:576 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _ZN4ch049copy_wideEPK6float4PS0_m:
  REG:32 STACK:128 SHARED:4096 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0

	code for sm_90
		Function : _ZN4ch049copy_wideEPK6float4PS0_m
        /*0000*/                   LDC.64 R12, c[0x3][R24+0x8] ;                       /* 0x00000a00ff017b82 */
        /*0010*/                   STL [R1], R4 ;                                      /* 0x0000000402047981 */
		Function : _ZN4ch048copy_oneEPKfPfm
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;                        /* 0x0000000402047981 */
)SASS";
}  // namespace

TEST_CASE("one cuobjdump text gives each kernel's SASS, whole instructions and resources", "[cpu][sass]") {
  auto fns = cml::sass::parse(kResUsageAndSass);
  REQUIRE(fns.size() == 2);
  cml::sass::add_resources(fns, kResUsageAndSass);
  const auto wide = cml::sass::find(fns, "copy_wide");
  REQUIRE(wide);
  CHECK(wide->resources.registers == 32);
  CHECK(wide->resources.stack == 128);
  CHECK(wide->resources.shared == 4096);
  CHECK(wide->instructions[0] == "LDC.64 R12, c[0x3][R24+0x8]");
  CHECK(cml::sass::count_containing(*wide, "c[0x3][R") == 1);
  CHECK(cml::sass::count_pattern(*wide, "c[0x3][R") == 1);  // operand text
  CHECK(cml::sass::count_pattern(*wide, "STL") == 1);       // an opcode
  CHECK(cml::sass::first_containing(*wide, "STL") == "STL [R1], R4");
  const auto one = cml::sass::find(fns, "copy_one");
  REQUIRE(one);
  CHECK(one->resources.registers == 14);
  CHECK(cml::sass::count(*one, "LDG") == 1);
}

namespace {
// A build for two GPUs: each kernel once per architecture, each architecture with its own
// resource lines (cuobjdump -res-usage -sass of a fat binary, abridged).
const char* kTwoArchitectures = R"SASS(
Fatbin elf code:
================
arch = sm_75

Resource usage:
 Function _Z4pipePf:
  REG:4 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:356 TEXTURE:0 SURFACE:0 SAMPLER:0

	code for sm_75
		Function : _Z4pipePf
        /*0000*/                   BPT.TRAP 0x1 ;
        /*0010*/                   EXIT ;
Fatbin elf code:
================
arch = sm_90

Resource usage:
 Function _Z4pipePf:
  REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:536 TEXTURE:0 SURFACE:0 SAMPLER:0

	code for sm_90
		Function : _Z4pipePf
        /*0000*/                   LDGSTS.E.BYPASS.128.ZFILL [R3], desc[UR4][R4.64], P0 ;
        /*0010*/                   LDGDEPBAR ;
        /*0020*/                   EXIT ;
)SASS";
}  // namespace

TEST_CASE("a build for several architectures gives each kernel once per architecture, with its own resources",
          "[cpu][sass]") {
  auto fns = cml::sass::parse(kTwoArchitectures);
  cml::sass::add_resources(fns, kTwoArchitectures);
  REQUIRE(fns.size() == 2);
  CHECK(cml::sass::architectures(fns) == std::vector<int>{75, 90});
  const auto old = cml::sass::find(fns, "pipe", 75), hopper = cml::sass::find(fns, "pipe", 90);
  REQUIRE(old);
  REQUIRE(hopper);
  CHECK(cml::sass::count(*old, "LDGSTS") == 0);
  CHECK(cml::sass::count(*hopper, "LDGSTS") == 1);
  CHECK(old->resources.registers == 4);
  CHECK(hopper->resources.registers == 40);
  CHECK_FALSE(cml::sass::find(fns, "pipe", 86));
}

TEST_CASE("a GPU runs the code of its own architecture, else the newest of its major version below it", "[cpu][sass]") {
  const auto fns = cml::sass::parse(kTwoArchitectures);
  CHECK(cml::sass::architecture_run_by(fns, 90) == 90);
  CHECK(cml::sass::architecture_run_by(fns, 75) == 75);
  CHECK(cml::sass::architecture_run_by(fns, 86) == 0);   // no sm_8x code: the PTX would be compiled
  CHECK(cml::sass::architecture_run_by(fns, 120) == 0);  // sm_90 code does not run on sm_120
}

TEST_CASE("Turing's spelling of a 16-byte shared load counts as LDS.128", "[cpu][sass]") {
  const auto fns = cml::sass::parse(R"(
		Function : _Z4wideP6float4
        /*0000*/                   LDS.U.128 R4, [R2] ;
        /*0010*/                   STS.128 [R3], R4 ;
        /*0020*/                   IMAD.U32 R5, RZ, RZ, R6 ;
        /*0030*/                   EXIT ;
)");
  REQUIRE(fns.size() == 1);
  CHECK(cml::sass::count(fns[0], "LDS.128") == 1);
  CHECK(cml::sass::count(fns[0], "LDS") == 1);
  CHECK(cml::sass::count(fns[0], "IMAD.U32") == 1);  // a .U32 part is no .U
  CHECK(cml::sass::count(fns[0], "LDS.64") == 0);
}

// The shape of cuobjdump -ptx output (CUDA 13.0): a header per embedded PTX, then each entry.
constexpr const char* kPtx =
    "\nFatbin ptx code:\n================\narch = sm_90\ncode version = [9,0]\nhost = linux\ncompile_size = 64bit\n"
    ".version 9.0\n.target sm_90\n"
    ".visible .entry _ZN4ch0811bulk_kernelEv(\n)\n{\n"
    "mbarrier.init.shared::cta.b64 [%r1], %r2;\n"
    "fence.proxy.async.shared::cta;\n"
    "bar.sync 0;\n}\n"
    ".visible .entry _ZN4ch0811lazy_kernelEv(\n)\n{\n"
    "fence.proxy.async.shared::cta;\n"
    "mbarrier.init.shared::cta.b64 [%r1], %r2;\n"
    "bar.sync 0;\n}\n"
    ".visible .entry _ZN4ch0812light_kernelEv(\n)\n{\n"
    "mbarrier.init.shared::cta.b64 [%r1], %r2;\n"
    "fence.mbarrier_init.release.cluster;\n}\n"
    ".visible .entry _ZN4ch0812plain_kernelEv(\n)\n{\nret;\n}\n";

TEST_CASE("cuobjdump -ptx output splits into entries, each with its architecture", "[cpu][sass]") {
  const auto entries = cml::sass::parse_ptx(kPtx);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].mangled == "_ZN4ch0811bulk_kernelEv");
  CHECK(entries[0].name == "ch08::bulk_kernel()");
  CHECK(entries[0].arch == 90);
  CHECK(entries[1].text.find("lazy_kernel") != std::string::npos);
  CHECK(entries[1].text.find("bulk_kernel") == std::string::npos);
}

TEST_CASE("an mbarrier.init counts as fenced only with a proxy fence after it", "[cpu][sass]") {
  const auto entries = cml::sass::parse_ptx(kPtx);
  REQUIRE(entries.size() == 4);
  CHECK(cml::sass::mbarrier_init_fenced(entries[0]));        // fence.proxy.async after the init
  CHECK_FALSE(cml::sass::mbarrier_init_fenced(entries[1]));  // the fence came before it
  CHECK(cml::sass::mbarrier_init_fenced(entries[2]));        // the lighter fence.mbarrier_init
  CHECK(cml::sass::mbarrier_init_fenced(entries[3]));        // no barrier at all
}

namespace {
// Three kernels, cut from nvcc 13.0's sm_90 and sm_80 code: a 64-bit k % stages in the tile
// loop (its routine after EXIT, ending in RET), the same routine called once before the
// loop, and sm_80's bare CALL out of a loop to code that ends in EXIT.
const char* kCalls = R"SASS(
		Function : in_loop
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0020*/                   CALL.REL.NOINC 0x80 ;
        /*0030*/              @!P0 BRA 0x10 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA 0x50;
        /*0060*/                   NOP;
        /*0070*/                   NOP;
        /*0080*/                   IMAD R4, R4, R5, RZ ;
        /*0090*/              @!P1 BRA 0x80 ;
        /*00a0*/                   RET.REL.NODEC R20 0x0 ;
		Function : before_loop
        /*0000*/                   CALL.REL.NOINC 0x80 ;
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0020*/                   LDGSTS.E [R3], desc[UR4][R4.64] ;
        /*0030*/              @!P0 BRA 0x10 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA 0x50;
        /*0060*/                   NOP;
        /*0070*/                   NOP;
        /*0080*/                   IMAD R4, R4, R5, RZ ;
        /*0090*/                   RET.REL.NODEC R20 0x0 ;
		Function : loop_exit
        /*0000*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0010*/               @P0 CALL.REL.NOINC 0x40 ;
        /*0020*/                   BRA 0x0 ;
        /*0030*/                   NOP;
        /*0040*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0050*/                   EXIT ;
)SASS";
}  // namespace

TEST_CASE("a subroutine call counts only inside a loop, and only to code that returns", "[cpu][sass]") {
  const auto fns = cml::sass::parse(kCalls);
  REQUIRE(fns.size() == 3);
  CHECK(fns[0].offsets.size() == fns[0].opcodes.size());
  CHECK(fns[0].offsets[10] == 0xa0);
  CHECK(cml::sass::subroutine_calls_in_loops(fns[0]) == 1);
  CHECK(cml::sass::example_of(fns[0], cml::sass::kCallInLoop) == "CALL.REL.NOINC 0x80");
  CHECK(cml::sass::count_pattern(fns[0], cml::sass::kCallInLoop) == 1);
  CHECK(cml::sass::subroutine_calls_in_loops(fns[1]) == 0);  // once, before the loop
  CHECK(cml::sass::example_of(fns[1], cml::sass::kCallInLoop).empty());
  CHECK(cml::sass::subroutine_calls_in_loops(fns[2]) == 0);  // a way out of the loop, not a call
}

TEST_CASE("one lane's mbarrier arrival counts as the warp's only after the lanes met past their reads", "[cpu][sass]") {
  const auto entries = cml::sass::parse_ptx(
      "arch = sm_90\n"
      ".visible .entry _Z6synced(\n)\n{\n"
      "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r5];\n"
      "fma.rn.f32 %f6, %f1, %f2, %f6;\n"
      "bar.warp.sync -1;\n"
      "@%p1 bra $L__BB0_2;\n"
      "mbarrier.arrive.shared::cta.b64 _, [%r7];\n"
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], %r9;\n}\n"
      ".visible .entry _Z8unsynced(\n)\n{\n"
      "bar.warp.sync -1;\n"
      "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r5];\n"
      "fma.rn.f32 %f6, %f1, %f2, %f6;\n"
      "@%p1 bra $L__BB1_2;\n"
      "mbarrier.arrive.shared::cta.b64 _, [%r7];\n}\n"
      ".visible .entry _Z8producer(\n)\n{\n"
      "ld.shared.u32 %r1, [%r2];\n"
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], %r9;\n}\n");
  REQUIRE(entries.size() == 3);
  CHECK(cml::sass::mbarrier_arrivals_after_sync(entries[0]));
  CHECK_FALSE(cml::sass::mbarrier_arrivals_after_sync(entries[1]));  // a lane may still be reading
  CHECK(cml::sass::mbarrier_arrivals_after_sync(entries[2]));        // expect_tx arms; it frees nothing
}
