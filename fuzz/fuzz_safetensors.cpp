// libFuzzer target: SafetensorsFile::parse over arbitrary bytes must either accept the file (and then
// every tensor lies inside the input and is convertible or cleanly refused) or throw grpo::Error;
// it must never crash, read out of bounds or throw anything else. Seeds: fuzz/corpus/safetensors/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    grpo::SafetensorsFile f = grpo::SafetensorsFile::parse(data, size, "fuzz.safetensors");
    for (const grpo::StTensor& t : f.tensors()) {
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();  // a tensor escaped the input
      const int64_t numel = grpo::st_numel(t.shape);
      if (numel > (1 << 20)) continue;
      std::vector<float> out(static_cast<size_t>(numel));
      try {
        grpo::tensor_to_f32(t, out.data(), numel, f.path());
      } catch (const grpo::Error&) {
        // non-float dtypes are refused with an error
      }
    }
  } catch (const grpo::Error&) {
  }
  return 0;
}
