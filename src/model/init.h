// Random initialisation of a model's parameters like transformers: normal(0, initializer_range) for
// linear and embedding weights, ones for norm weights, zeros for biases. Values come from RNG streams
// keyed by (seed, tensor index in expected_tensors order, chunk), so they never depend on thread count.
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"

namespace grpo {

class ModelWeights;

// The standard deviation for tensor `name`: the vision tower's initializer_range for model.visual.*,
// else the text config's.
double parameter_init_std(const ModelConfig& c, const std::string& name);
// Fills `out` [numel] for the tensor `name`, the index-th of expected_tensors(c).
void init_parameter(const std::string& name, size_t index, int64_t numel, uint64_t seed, double std, float* out);
// Initialises every parameter of `w` in place.
void init_parameters(ModelWeights& w, uint64_t seed);

}  // namespace grpo
