// The measured speed of AVX-512 BF16 dot products against f32 FMAs on this core (bf16_dot_rate.cpp).
#pragma once

namespace grpo::cpu {

// Flops per second of vdpbf16ps over those of vfmadd231ps (both 512-bit, one thread, ~2 ms): ~2 where bf16
// dot products issue as fast as FMAs (AMD Zen 4 / Zen 5), ~0.5 where they issue at half the rate. Only on a
// CPU with AVX-512 F and BF16 (it executes those instructions).
double bf16_dot_flops_vs_fma();

}  // namespace grpo::cpu
