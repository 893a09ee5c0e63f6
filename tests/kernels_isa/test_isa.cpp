// The one instruction-set decision (kernels/backend.h): levels from CPU features (a CPU without AVX2 or FMA
// is refused naming what it lacks; amx only with the tile state granted by Linux), native bf16 GEMM only
// where bf16 dot products are fast or at amx, the GRPO_ISA
// cap (lowers, never raises; an unknown value is an error listing the valid ones), the start-up line, and
// the tests' overrides every kernel family follows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "isa_util.h"
#include "kernels/backend.h"

namespace grpo {
namespace {

CpuInfo avx2_cpu() {
  CpuInfo c;
  c.model = "Test CPU 3000";
  c.avx2 = c.fma = true;
  return c;
}
CpuInfo avx512_cpu() {
  CpuInfo c = avx2_cpu();
  c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = true;
  return c;
}
CpuInfo avx512_bf16_cpu(double dot_speed = 2.0) {  // 2: bf16 dot products as fast as FMAs (AMD Zen 4 / 5)
  CpuInfo c = avx512_cpu();
  c.avx512_bf16 = true;
  c.bf16_dot_speed = dot_speed;
  return c;
}

CpuInfo amx_cpu(bool permitted = true) {  // an Intel Xeon of the Sapphire Rapids kind
  CpuInfo c = avx512_bf16_cpu(0.5);
  c.amx_tile = c.amx_bf16 = true;
  c.amx_permitted = permitted;
  if (!permitted) c.amx_refusal = "arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: Invalid argument";
  return c;
}

std::string error_of(const CpuInfo& cpu, const char* cap) {
  try {
    decide_isa(cpu, cap);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(IsaDecision, LevelFollowsTheCpuFeatures) {
  EXPECT_EQ(decide_isa(avx2_cpu(), nullptr).isa, Isa::Avx2);
  EXPECT_EQ(decide_isa(avx512_cpu(), nullptr).isa, Isa::Avx512);
  EXPECT_EQ(decide_isa(avx512_bf16_cpu(), nullptr).isa, Isa::Avx512Bf16);
  CpuInfo no_dq = avx512_bf16_cpu();
  no_dq.avx512dq = false;  // every AVX-512 feature the 16-lane kernels are compiled for is needed
  EXPECT_EQ(decide_isa(no_dq, nullptr).isa, Isa::Avx2);
  CpuInfo bf16_without_avx512 = avx2_cpu();
  bf16_without_avx512.avx512_bf16 = true;
  EXPECT_EQ(decide_isa(bf16_without_avx512, nullptr).isa, Isa::Avx2);
  EXPECT_EQ(decide_isa(amx_cpu(), nullptr).isa, Isa::Amx);
  EXPECT_EQ(decide_isa(amx_cpu(false), nullptr).isa, Isa::Avx512Bf16) << "Linux refused the tile state";
  CpuInfo tile_without_bf16 = amx_cpu();
  tile_without_bf16.amx_bf16 = false;
  EXPECT_EQ(decide_isa(tile_without_bf16, nullptr).isa, Isa::Avx512Bf16);
  CpuInfo amx_without_avx512_bf16 = amx_cpu();
  amx_without_avx512_bf16.avx512_bf16 = false;
  EXPECT_EQ(decide_isa(amx_without_avx512_bf16, nullptr).isa, Isa::Avx512);
}

TEST(IsaDecision, AmxMakesBf16GemmNativeWhateverTheDotProductSpeed) {
  const IsaDecision amx = decide_isa(amx_cpu(), nullptr);  // vdpbf16ps at 0.5x the FMA flops
  EXPECT_TRUE(amx.bf16_gemm_native);
  const IsaDecision capped = decide_isa(amx_cpu(), "avx512_bf16");
  EXPECT_EQ(capped.isa, Isa::Avx512Bf16);
  EXPECT_EQ(capped.cpu_level, Isa::Amx);
  EXPECT_FALSE(capped.bf16_gemm_native) << "below amx, the dot products' speed decides again";
}

TEST(IsaDecision, NativeBf16GemmNeedsFastBf16DotProducts) {
  EXPECT_TRUE(decide_isa(avx512_bf16_cpu(2.0), nullptr).bf16_gemm_native);
  EXPECT_TRUE(decide_isa(avx512_bf16_cpu(kNativeBf16GemmMinSpeed), nullptr).bf16_gemm_native);
  const IsaDecision slow = decide_isa(avx512_bf16_cpu(0.47), nullptr);  // the Intel Xeon measured here
  EXPECT_EQ(slow.isa, Isa::Avx512Bf16) << "the other bf16 instructions are still used";
  EXPECT_FALSE(slow.bf16_gemm_native);
  EXPECT_FALSE(decide_isa(avx512_bf16_cpu(2.0), "avx512").bf16_gemm_native);
  EXPECT_FALSE(decide_isa(avx512_cpu(), nullptr).bf16_gemm_native);
  const std::string line = isa_report(slow);
  EXPECT_NE(line.find("bf16 emulated"), std::string::npos) << line;
  EXPECT_NE(line.find("bf16 dot products give 0.47x the f32 FMA flops"), std::string::npos) << line;
  EXPECT_NE(line.find("vcvtneps2bf16"), std::string::npos) << line;
}

// Where this CPU has AVX-512 BF16 its measured speed is a plausible ratio (one vdpbf16ps issues at most as
// fast as two FMAs, and at least at a tenth of one FMA's rate on any CPU seen); elsewhere it is not measured.
TEST(IsaDecision, Bf16DotSpeedIsMeasuredWhereTheCpuHasIt) {
  const CpuInfo cpu = detect_cpu();
  if (!(cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq && cpu.avx512_bf16)) {
    EXPECT_EQ(cpu.bf16_dot_speed, 0.0);
    GTEST_SKIP() << "this CPU has no AVX-512 BF16: " << cpu.model;
  }
  EXPECT_GT(cpu.bf16_dot_speed, 0.1) << cpu.model;
  EXPECT_LT(cpu.bf16_dot_speed, 2.5) << cpu.model;
  std::cout << cpu.model << ": bf16 dot products " << cpu.bf16_dot_speed << "x the f32 FMA flops\n";
}

TEST(IsaDecision, CpuWithoutAvx2OrFmaIsRefusedNamingWhatIsMissing) {
  CpuInfo old = avx2_cpu();
  old.avx2 = old.fma = false;
  const std::string e = error_of(old, nullptr);
  EXPECT_NE(e.find("[cpu]"), std::string::npos) << e;
  EXPECT_NE(e.find("Test CPU 3000"), std::string::npos) << e;
  EXPECT_NE(e.find("lacks avx2 fma"), std::string::npos) << e;
  CpuInfo no_fma = avx512_cpu();
  no_fma.fma = false;
  const std::string f = error_of(no_fma, "avx2");  // a cap does not make a CPU without FMA usable
  EXPECT_NE(f.find("lacks fma"), std::string::npos) << f;
  EXPECT_EQ(f.find("avx2 fma"), std::string::npos) << f;
}

TEST(IsaDecision, GrpoIsaCapsButNeverRaises) {
  EXPECT_EQ(decide_isa(avx512_bf16_cpu(), "avx2").isa, Isa::Avx2);
  EXPECT_EQ(decide_isa(avx512_bf16_cpu(), "avx512").isa, Isa::Avx512);
  EXPECT_EQ(decide_isa(avx512_bf16_cpu(), "avx512_bf16").isa, Isa::Avx512Bf16);
  EXPECT_EQ(decide_isa(avx2_cpu(), "avx512_bf16").isa, Isa::Avx2);
  EXPECT_EQ(decide_isa(avx512_cpu(), "avx512_bf16").isa, Isa::Avx512);
  EXPECT_EQ(decide_isa(avx512_cpu(), "").isa, Isa::Avx512);  // set but empty: no cap
  EXPECT_EQ(decide_isa(avx512_cpu(), "avx2").cpu_level, Isa::Avx512);
  EXPECT_EQ(decide_isa(avx512_bf16_cpu(), "amx").isa, Isa::Avx512Bf16) << "a cap above the CPU has no effect";
  EXPECT_EQ(decide_isa(amx_cpu(), "amx").isa, Isa::Amx);
  EXPECT_EQ(decide_isa(amx_cpu(), "avx512").isa, Isa::Avx512);
  EXPECT_EQ(decide_isa(amx_cpu(false), "amx").isa, Isa::Avx512Bf16);
}

TEST(IsaDecision, UnknownGrpoIsaValueIsAClearError) {
  for (const char* bad : {"avx3", "AVX2", "sse4", " avx2"}) {
    const std::string e = error_of(avx512_bf16_cpu(), bad);
    EXPECT_NE(e.find(std::string("GRPO_ISA=\"") + bad + "\""), std::string::npos) << e;
    EXPECT_NE(e.find("expected avx2, avx512, avx512_bf16 or amx"), std::string::npos) << e;
  }
}

TEST(IsaDecision, StartUpLineNamesLevelCpuAndEveryFamilysPath) {
  const std::string avx2 = isa_report(decide_isa(avx2_cpu(), nullptr));
  EXPECT_EQ(avx2.rfind("[cpu] avx2: using AVX2+FMA 8-lane kernels", 0), 0u) << avx2;
  EXPECT_NE(avx2.find("bf16 emulated"), std::string::npos) << avx2;
  EXPECT_NE(avx2.find("Test CPU 3000"), std::string::npos) << avx2;
  EXPECT_NE(avx2.find("no avx512f avx512bw avx512vl avx512dq avx512_bf16 amx_tile amx_bf16"), std::string::npos)
      << avx2;
  EXPECT_EQ(avx2.find('\n'), std::string::npos) << "one line";

  const std::string native = isa_report(decide_isa(avx512_bf16_cpu(), nullptr));
  EXPECT_EQ(native.rfind("[cpu] avx512_bf16: using AVX-512 16-lane kernels", 0), 0u) << native;
  EXPECT_NE(native.find("bf16 native (bf16 dot products; this core's bf16 dot products give 2.00x"),
            std::string::npos) << native;
  EXPECT_NE(native.find("vcvtneps2bf16"), std::string::npos) << native;

  const std::string capped = isa_report(decide_isa(avx512_bf16_cpu(), "avx2"));
  EXPECT_EQ(capped.rfind("[cpu] avx2:", 0), 0u) << capped;
  EXPECT_NE(capped.find("bf16 emulated"), std::string::npos) << capped;
  EXPECT_NE(capped.find("capped by GRPO_ISA=avx2"), std::string::npos) << capped;
  EXPECT_NE(capped.find("oneDNN capped at avx2"), std::string::npos) << capped;

  const std::string above = isa_report(decide_isa(avx2_cpu(), "avx512"));
  EXPECT_NE(above.find("GRPO_ISA=avx512 (at or above the CPU's level: no effect)"), std::string::npos) << above;

  const std::string amx = isa_report(decide_isa(amx_cpu(), nullptr));
  EXPECT_EQ(amx.rfind("[cpu] amx: using AVX-512 16-lane kernels, GEMM oneDNN f32 + bf16 native (AMX tiles)", 0), 0u)
      << amx;
  EXPECT_NE(amx.find("rollout bf16 GEMV on AMX tiles"), std::string::npos) << amx;
  EXPECT_NE(amx.find("oneDNN capped at avx512_core_amx"), std::string::npos) << amx;
  EXPECT_NE(amx.find("avx512_bf16 amx_tile amx_bf16)"), std::string::npos) << amx;

  const std::string refused = isa_report(decide_isa(amx_cpu(false), nullptr));
  EXPECT_EQ(refused.rfind("[cpu] avx512_bf16:", 0), 0u) << refused;
  EXPECT_NE(refused.find("AMX not used: Linux refused the tile state, arch_prctl"), std::string::npos) << refused;
  EXPECT_NE(refused.find("oneDNN capped at avx512_core_bf16"), std::string::npos) << refused;

  const std::string amx_above = isa_report(decide_isa(avx512_bf16_cpu(), "amx"));
  EXPECT_NE(amx_above.find("GRPO_ISA=amx (at or above the CPU's level: no effect)"), std::string::npos) << amx_above;
}

// Where the CPU has no AMX nothing is asked of Linux; where it has, the answer is recorded either way.
TEST(IsaDecision, TileStateIsAskedForOnlyWhereTheCpuHasAmx) {
  const CpuInfo cpu = detect_cpu();
  if (!(cpu.amx_tile && cpu.amx_bf16)) {
    EXPECT_FALSE(cpu.amx_permitted);
    EXPECT_EQ(cpu.amx_refusal, "");
    GTEST_SKIP() << "this CPU has no AMX: " << cpu.model;
  }
  EXPECT_NE(cpu.amx_permitted, !cpu.amx_refusal.empty()) << cpu.amx_refusal;
}

// This process: the decision is the detected CPU's level under the real GRPO_ISA.
TEST(IsaDecision, ProcessDecisionIsTheCpusUnderGrpoIsa) {
  const IsaDecision& d = isa_decision();
  const IsaDecision again = decide_isa(detect_cpu(), std::getenv("GRPO_ISA"));
  EXPECT_EQ(d.isa, again.isa);
  EXPECT_EQ(d.cpu_level, again.cpu_level);
  EXPECT_EQ(d.bf16_gemm_native, d.isa >= Isa::Amx || (d.isa >= Isa::Avx512Bf16 &&
                                                        d.cpu.bf16_dot_speed >= kNativeBf16GemmMinSpeed));
  EXPECT_LE(d.isa, d.cpu_level);
  EXPECT_EQ(isa(), d.isa);
  std::cout << isa_report(d) << "\n";
}

TEST(IsaDecision, TestOverrideLowersEveryAnswerAndCannotRaise) {
  for (Isa level : test::runnable_isas()) {
    test::ScopedIsa scope(level);
    EXPECT_EQ(isa(), level);
    EXPECT_EQ(cpu_has_avx512(), level >= Isa::Avx512);
    EXPECT_EQ(cpu_has_avx512_bf16(), level >= Isa::Avx512Bf16);
    EXPECT_EQ(cpu_has_amx(), level >= Isa::Amx);
    EXPECT_EQ(gemm_bf16_native(), level >= Isa::Avx512Bf16 && isa_decision().bf16_gemm_native);
    if (level < Isa::Avx512Bf16) {
      EXPECT_THROW(set_bf16_gemm_for_tests(true), Error) << "native bf16 GEMM below avx512_bf16";
      continue;
    }
    for (bool native : {true, false}) {
      set_bf16_gemm_for_tests(native);
      EXPECT_EQ(gemm_bf16_native(), native);
    }
    set_bf16_gemm_for_tests(std::nullopt);
    EXPECT_EQ(gemm_bf16_native(), isa_decision().bf16_gemm_native);
  }
  EXPECT_EQ(isa(), isa_decision().isa) << "the scope restores the decision";
  for (Isa level : {Isa::Avx512, Isa::Avx512Bf16, Isa::Amx}) {
    if (isa_available(level)) continue;
    EXPECT_THROW(set_isa_for_tests(level), Error) << isa_name(level) << " is above this process's decision";
    EXPECT_EQ(isa(), isa_decision().isa);
  }
}

}  // namespace
}  // namespace grpo
