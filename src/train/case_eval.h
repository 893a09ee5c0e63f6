// Evaluates a reference case in the format of ../shared/reference (lm_case / grpo_case safetensors)
// with the engine: logits, log-probs, entropy, the losses and the parameter gradients, under the same
// tensor names. Used by `grpo debug forward-backward` and by the reference tests.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/decoder.h"
#include "model/safetensors.h"

namespace grpo::train {

struct CaseTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
using CaseOutputs = std::map<std::string, CaseTensor>;

struct CaseOptions {
  ComputeMode mode = ComputeMode::F32;
  bool checkpoint_activations = false;
  int64_t lm_head_chunk = 256;
  const DecoderKernels* kernels = nullptr;  // null: fused
  const LoraAdapters* lora = nullptr;       // attached adapters: the base is frozen, gradients are the adapters'
};

// lm case (grpo == nullptr): `loss` = mean next-token cross-entropy and its gradients.
// grpo case: `loss.<mode>` for the four aggregation modes, `pg_clipfrac`, and the gradients of
// `loss.<gradients_for>` (default token-mean); coefficients from the case's json (see reference README).
// With opt.lora the gradients are `grad.<adapter key>` of every lora_A / lora_B and none of the base.
CaseOutputs evaluate_case(ModelWeights& weights, const SafetensorsFile& case_file, const nlohmann::json* grpo,
                          const CaseOptions& opt);

// Reads an integer (I64/I32) or float tensor of a case file, naming the file and tensor in errors.
std::vector<int64_t> case_ints(const SafetensorsFile& f, const std::string& name);
std::vector<float> case_floats(const SafetensorsFile& f, const std::string& name);

}  // namespace grpo::train
