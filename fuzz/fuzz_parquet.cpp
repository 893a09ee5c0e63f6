// libFuzzer target: the Parquet reader over arbitrary bytes must either decode every row of every row
// group (and a row range of each) or throw grpo::Error; it must never crash, read out of bounds, hang or
// throw anything else. Seeds: fuzz/corpus/parquet/ (small files from tests/data/parquet's writers).
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "data/parquet/parquet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const grpo::parquet::ParquetFile f(data, size, "fuzz.parquet");
    for (int g = 0; g < f.num_row_groups(); ++g) {
      const int64_t n = f.row_group_rows(g);
      if (n > (1 << 16)) continue;  // a claimed row count this large only costs time
      try {
        f.read_row_group(g);
      } catch (const grpo::Error&) {
      }
      try {
        f.read_rows(g, n / 2, n, {f.column_names().back()});
      } catch (const grpo::Error&) {
      }
    }
  } catch (const grpo::Error&) {
  }
  return 0;
}
