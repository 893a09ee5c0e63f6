// Tests of the safetensors reader/writer: round trips for every dtype (incl. zero-size and rank-0
// tensors), header padding and dtype ordering, and every malformed-file case the reader must reject
// with a grpo::Error that names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "core/files.h"
#include "model/safetensors.h"
#include "test_util.h"

using namespace grpo;
namespace fs = std::filesystem;

namespace {

using grpo::test::fresh_temp_dir;

// A safetensors file from a literal header and `data_size` bytes of data (values 0, 1, 2, ...).
std::vector<uint8_t> make_file(const std::string& header, size_t data_size) {
  std::vector<uint8_t> b(8 + header.size() + data_size);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(b.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_size; ++i) b[8 + header.size() + i] = static_cast<uint8_t>(i);
  return b;
}

// Parses and expects a grpo::Error whose message contains every part of `needles`.
void expect_rejected(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> needles) {
  try {
    SafetensorsFile::parse(bytes.data(), bytes.size(), "bad.safetensors");
    ADD_FAILURE() << "accepted a bad file; expected an error containing " << *needles.begin();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing \"" << n << "\" in: " << msg;
  }
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtypeIncludingZeroSizeAndRank0) {
  const std::string dir = fresh_temp_dir("model_io", "roundtrip");
  const StDType all[] = {StDType::BOOL, StDType::U8,  StDType::I8,  StDType::I16,     StDType::U16,
                         StDType::F16,  StDType::BF16, StDType::I32, StDType::U32,     StDType::F32,
                         StDType::F64,  StDType::I64, StDType::U64, StDType::F8_E4M3, StDType::F8_E5M2};
  std::mt19937 gen(7);
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<StTensorOut> outs;
  for (StDType t : all) {
    std::vector<int64_t> shape{2, 3};
    payloads.emplace_back(6 * st_dtype_size(t));
    for (auto& b : payloads.back()) b = static_cast<uint8_t>(gen());
    outs.push_back({"t." + std::string(st_dtype_name(t)), t, shape, payloads.back().data()});
  }
  float scalar = 3.5f;
  outs.push_back({"scalar", StDType::F32, {}, &scalar});
  outs.push_back({"empty", StDType::F32, {0, 4}, nullptr});
  outs.push_back({"empty_bf16", StDType::BF16, {3, 0}, nullptr});
  const std::string path = dir + "/all.safetensors";
  write_safetensors(path, outs, {{"format", "pt"}, {"note", "héllo"}});

  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "héllo");
  ASSERT_EQ(f.tensors().size(), outs.size());
  for (size_t i = 0; i < std::size(all); ++i) {
    const StTensor* t = f.find(outs[i].name);
    ASSERT_NE(t, nullptr) << outs[i].name;
    EXPECT_EQ(t->dtype, all[i]);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    ASSERT_EQ(t->nbytes, payloads[i].size());
    EXPECT_EQ(std::memcmp(t->data, payloads[i].data(), t->nbytes), 0) << outs[i].name;
  }
  const StTensor* s = f.find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  float back = 0;
  tensor_to_f32(*s, &back, 1, path);
  EXPECT_EQ(back, 3.5f);
  EXPECT_EQ(f.find("empty")->nbytes, 0u);
  EXPECT_EQ(f.find("empty")->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(f.find("empty_bf16")->nbytes, 0u);
  EXPECT_EQ(f.find("missing"), nullptr);
  fs::remove_all(dir);
}

TEST(Safetensors, WriterPadsHeaderAndPutsLargerDtypesFirst) {
  const std::string dir = fresh_temp_dir("model_io", "layout");
  uint8_t u8[3] = {1, 2, 3};
  double f64[2] = {1.0, -2.0};
  uint16_t bf[1] = {0x3f80};
  const std::string path = dir + "/x.safetensors";
  write_safetensors(path, {{"a_u8", StDType::U8, {3}, u8}, {"b_bf16", StDType::BF16, {1}, bf},
                           {"c_f64", StDType::F64, {2}, f64}});
  std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  SafetensorsFile f = SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "c_f64");  // data-offset order: f64, bf16, u8
  EXPECT_EQ(f.tensors()[1].name, "b_bf16");
  EXPECT_EQ(f.tensors()[2].name, "a_u8");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensors()[0].data) % 8, 0u);
  EXPECT_THROW(write_safetensors(path, {{"x", StDType::U8, {1}, u8}, {"x", StDType::U8, {1}, u8}}), Error);
  EXPECT_THROW(write_safetensors(path, {{"x", StDType::U8, {-1}, u8}}), Error);
  EXPECT_THROW(write_safetensors(path, {{"__metadata__", StDType::U8, {1}, u8}}), Error);
  fs::remove_all(dir);
}

TEST(Safetensors, ConvertsF32Bf16F16ToF32) {
  const float vals[4] = {1.0f, -2.5f, 0.0f, 65504.0f};
  uint16_t bf[4], h[4] = {0x3C00, 0xC100, 0x0000, 0x7BFF};  // f16: 1, -2.5, 0, 65504
  for (int i = 0; i < 4; ++i) bf[i] = f32_to_bf16(vals[i]);
  float out[4];
  StTensor tb{"w", StDType::BF16, {4}, reinterpret_cast<const uint8_t*>(bf), 8};
  tensor_to_f32(tb, out, 4, "m.safetensors");
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[3], 65536.0f);  // bf16 rounding of 65504
  StTensor th{"w", StDType::F16, {4}, reinterpret_cast<const uint8_t*>(h), 8};
  tensor_to_f32(th, out, 4, "m.safetensors");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], vals[i]);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  try {
    tensor_to_f32(th, out, 3, "m.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.safetensors: tensor \"w\""), std::string::npos) << e.what();
  }
  int32_t ints[1] = {1};
  StTensor ti{"ids", StDType::I32, {1}, reinterpret_cast<const uint8_t*>(ints), 4};
  EXPECT_THROW(tensor_to_f32(ti, out, 1, "m.safetensors"), Error);
}

TEST(Safetensors, AcceptsMinimalValidFiles) {
  auto ok = make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(SafetensorsFile::parse(ok.data(), ok.size(), "ok").tensors().size(), 1u);
  auto empty = make_file("{}", 0);
  EXPECT_TRUE(SafetensorsFile::parse(empty.data(), empty.size(), "empty").tensors().empty());
  auto padded = make_file("{}      ", 0);  // trailing spaces in the header
  EXPECT_NO_THROW(SafetensorsFile::parse(padded.data(), padded.size(), "padded"));
  // Offsets listed out of order are fine: only the tiling matters.
  auto unordered = make_file(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                             R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 4);
  SafetensorsFile u = SafetensorsFile::parse(unordered.data(), unordered.size(), "u");
  EXPECT_EQ(u.tensors()[0].name, "a");
  EXPECT_EQ(u.find("b")->data[0], 2);
}

TEST(Safetensors, RejectsTruncatedFiles) {
  std::vector<uint8_t> tiny = {1, 2, 3};
  expect_rejected(tiny, {"truncated"});
  auto f = make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
  f.resize(f.size() - 4);  // data cut short
  expect_rejected(f, {"\"a\"", "data size 12"});
  auto h = make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  h.resize(20);  // header cut short
  expect_rejected(h, {"truncated", "header length"});
}

TEST(Safetensors, RejectsHugeHeaderLength) {
  std::vector<uint8_t> b(16, ' ');
  uint64_t n = 100'000'001;
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
  expect_rejected(b, {"header length 100000001", "limit"});
  for (int i = 0; i < 8; ++i) b[i] = 0xFF;
  expect_rejected(b, {"exceeds the limit"});
}

TEST(Safetensors, RejectsHeadersThatLie) {
  // Overlap: b starts inside a.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6),
                  {"\"b\"", "overlap", "\"a\""});
  // Gap between tensors.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                            R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", 6),
                  {"\"b\"", "gap"});
  // Data not starting at 0.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", 3), {"gap"});
  // Out of range.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", 4), {"data size 4"});
  // Size mismatch between shape and offsets.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), {"needs 12"});
  // end < begin.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4), {"end < begin"});
  // Trailing bytes after the last tensor.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 5), {"3 trailing bytes"});
  // Offsets beyond uint64 / negative / fractional.
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}})", 1),
                  {"data_offsets"});
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1), {"non-negative"});
}

TEST(Safetensors, RejectsBadShapesAndDtypes) {
  expect_rejected(make_file(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1), {"unknown dtype \"Q4\""});
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), {"shape"});
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), {"shape"});
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
                  {"overflows"});
  expect_rejected(make_file(R"({"a":{"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,8]}})", 8),
                  {"overflows"});
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1]}})", 4), {"missing field \"data_offsets\""});
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4),
                  {"unexpected field \"x\""});
  expect_rejected(make_file(R"({"a":[1,2]})", 0), {"\"a\"", "expected an object"});
  expect_rejected(make_file(R"({"__metadata__":{"k":1}})", 0), {"__metadata__", "string"});
}

TEST(Safetensors, RejectsDuplicateNames) {
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                            R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2),
                  {"duplicate", "\"a\""});
  expect_rejected(make_file(R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
                  {"duplicate", "\"dtype\""});
}

TEST(Safetensors, RejectsNonObjectAndNonJsonAndBadUtf8Headers) {
  expect_rejected(make_file("[1, 2]", 0), {"starting with '{'"});
  expect_rejected(make_file(" {}", 0), {"starting with '{'"});
  expect_rejected(make_file("", 0), {"starting with '{'"});
  expect_rejected(make_file("{\"a\":", 0), {"not valid JSON"});
  expect_rejected(make_file("{} {}", 0), {"not valid JSON"});
  expect_rejected(make_file("{\"\xC3\x28\":1}", 0), {"UTF-8"});
  expect_rejected(make_file("{\"\xED\xA0\x80\":1}", 0), {"UTF-8"});  // encoded surrogate
  expect_rejected(make_file("{\"\xC0\xAF\":1}", 0), {"UTF-8"});      // overlong '/'
}

TEST(Safetensors, OpenNamesMissingAndEmptyFiles) {
  const std::string dir = fresh_temp_dir("model_io", "open");
  EXPECT_THROW(SafetensorsFile::open(dir + "/nope.safetensors"), Error);
  write_file_atomic(dir + "/empty.safetensors", "");
  try {
    SafetensorsFile::open(dir + "/empty.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.safetensors: truncated"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}
