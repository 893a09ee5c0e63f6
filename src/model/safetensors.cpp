// safetensors reader and writer (see safetensors.h). Validation follows the reference implementation
// (huggingface/safetensors): header length <= 100,000,000; header is UTF-8 JSON starting with '{';
// tensors tile the data from 0 with no gaps or overlaps; end - begin == numel * dtype size; no trailing
// bytes; no duplicate names (checked while parsing, since a JSON object would keep only the last one).
#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/dtype.h"
#include "core/error.h"

namespace grpo {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeInfo {
  StDType dtype;
  std::string_view name;
  int64_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {StDType::BOOL, "BOOL", 1}, {StDType::U8, "U8", 1},       {StDType::I8, "I8", 1},
    {StDType::I16, "I16", 2},   {StDType::U16, "U16", 2},     {StDType::F16, "F16", 2},
    {StDType::BF16, "BF16", 2}, {StDType::I32, "I32", 4},     {StDType::U32, "U32", 4},
    {StDType::F32, "F32", 4},   {StDType::F64, "F64", 8},     {StDType::I64, "I64", 8},
    {StDType::U64, "U64", 8},   {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::F8_E5M2, "F8_E5M2", 1},
};

const DTypeInfo& info(StDType t) {
  for (const DTypeInfo& d : kDTypes)
    if (d.dtype == t) return d;
  fail("[safetensors] invalid dtype value ", static_cast<int>(t));
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. Returns the offset of the first
// bad byte, or npos.
size_t find_invalid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

// Parses the header JSON, rejecting a key repeated inside one object (at any depth).
nlohmann::json parse_header_json(const char* begin, const char* end, const std::string& name) {
  std::vector<std::unordered_set<std::string>> keys_per_object;
  auto on_event = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      keys_per_object.emplace_back();
    } else if (ev == E::object_end) {
      keys_per_object.pop_back();
    } else if (ev == E::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys_per_object.back().insert(key).second)
        fail("[safetensors] ", name, ": duplicate key \"", key, "\" in the header");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(begin, end, on_event);
  } catch (const nlohmann::json::exception& e) {
    fail("[safetensors] ", name, ": header is not valid JSON: ", e.what());
  }
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Non-negative integer field value, or an error naming the tensor and field.
uint64_t as_uint(const nlohmann::json& v, const std::string& file, const std::string& tensor, const char* field) {
  if (!v.is_number_unsigned())
    fail("[safetensors] ", file, ": tensor \"", tensor, "\": ", field,
         " must hold non-negative integers, got ", v.dump());
  return v.get<uint64_t>();
}

struct ParsedEntry {
  StTensor tensor;
  uint64_t begin, end;
};

ParsedEntry parse_entry(const std::string& tname, const nlohmann::json& v, const std::string& file) {
  auto where = [&] { return cat("[safetensors] ", file, ": tensor \"", tname, "\": "); };
  if (!v.is_object()) fail(where(), "expected an object {dtype, shape, data_offsets}, got ", v.type_name());
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail(where(), "unexpected field \"", key, "\" (expected dtype, shape, data_offsets)");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!v.contains(field)) fail(where(), "missing field \"", field, "\"");
  const nlohmann::json& jd = v["dtype"];
  if (!jd.is_string()) fail(where(), "dtype must be a string, got ", jd.dump());
  ParsedEntry e;
  e.tensor.name = tname;
  if (!st_dtype_from_name(jd.get_ref<const std::string&>(), &e.tensor.dtype))
    fail(where(), "unknown dtype \"", jd.get_ref<const std::string&>(), "\"");
  const nlohmann::json& js = v["shape"];
  if (!js.is_array()) fail(where(), "shape must be an array, got ", js.dump());
  int64_t numel = 1;
  for (const nlohmann::json& d : js) {
    uint64_t dim = as_uint(d, file, tname, "shape");
    if (dim > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(numel, static_cast<int64_t>(dim), &numel))
      fail(where(), "shape ", js.dump(), " overflows");
    e.tensor.shape.push_back(static_cast<int64_t>(dim));
  }
  int64_t nbytes;
  if (__builtin_mul_overflow(numel, st_dtype_size(e.tensor.dtype), &nbytes))
    fail(where(), "shape ", js.dump(), " overflows");
  e.tensor.nbytes = static_cast<size_t>(nbytes);
  const nlohmann::json& jo = v["data_offsets"];
  if (!jo.is_array() || jo.size() != 2)
    fail(where(), "data_offsets must be an array [begin, end], got ", jo.dump());
  e.begin = as_uint(jo[0], file, tname, "data_offsets");
  e.end = as_uint(jo[1], file, tname, "data_offsets");
  if (e.end < e.begin) fail(where(), "data_offsets [", e.begin, ", ", e.end, "]: end < begin");
  if (e.end - e.begin != e.tensor.nbytes)
    fail(where(), "data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin, " bytes but ",
         st_dtype_name(e.tensor.dtype), " ", st_shape_str(e.tensor.shape), " needs ", e.tensor.nbytes);
  return e;
}

}  // namespace

int64_t st_dtype_size(StDType t) { return info(t).size; }
std::string_view st_dtype_name(StDType t) { return info(t).name; }

bool st_dtype_from_name(std::string_view name, StDType* out) {
  for (const DTypeInfo& d : kDTypes)
    if (d.name == name) {
      *out = d.dtype;
      return true;
    }
  return false;
}

int64_t st_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string st_shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile SafetensorsFile::parse(const uint8_t* bytes, size_t size, const std::string& name) {
  SafetensorsFile f;
  f.path_ = name;
  if (size < 8) fail("[safetensors] ", name, ": truncated: ", size, " bytes, need at least 8 for the header length");
  const uint64_t n = read_u64_le(bytes);
  if (n > kMaxHeaderBytes) fail("[safetensors] ", name, ": header length ", n, " exceeds the limit ", kMaxHeaderBytes);
  if (n > size - 8)
    fail("[safetensors] ", name, ": truncated: header length ", n, " but only ", size - 8, " bytes follow");
  const uint8_t* header = bytes + 8;
  if (n == 0 || header[0] != '{') fail("[safetensors] ", name, ": header must be a JSON object starting with '{'");
  size_t bad = find_invalid_utf8(header, n);
  if (bad != std::string::npos) fail("[safetensors] ", name, ": header is not valid UTF-8 (byte ", bad, ")");
  nlohmann::json j = parse_header_json(reinterpret_cast<const char*>(header),
                                       reinterpret_cast<const char*>(header + n), name);
  if (!j.is_object()) fail("[safetensors] ", name, ": header must be a JSON object, got ", j.type_name());

  const uint8_t* data = header + n;
  const uint64_t data_size = size - 8 - n;
  std::vector<ParsedEntry> entries;
  for (const auto& [key, v] : j.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) fail("[safetensors] ", name, ": __metadata__ must be an object of strings");
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string())
          fail("[safetensors] ", name, ": __metadata__ \"", mk, "\" must be a string, got ", mv.dump());
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, v, name));
  }
  std::sort(entries.begin(), entries.end(), [](const ParsedEntry& a, const ParsedEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const std::string* prev = nullptr;
  for (ParsedEntry& e : entries) {
    if (e.begin != pos) {
      if (e.begin < pos)
        fail("[safetensors] ", name, ": tensor \"", e.tensor.name, "\": data_offsets [", e.begin, ", ", e.end,
             "] overlap tensor \"", *prev, "\" (which ends at ", pos, ")");
      fail("[safetensors] ", name, ": tensor \"", e.tensor.name, "\": data_offsets [", e.begin, ", ", e.end,
           "] leave a gap: the previous tensor ends at ", pos);
    }
    if (e.end > data_size)
      fail("[safetensors] ", name, ": tensor \"", e.tensor.name, "\": data_offsets end ", e.end,
           " > data size ", data_size, " (truncated file?)");
    e.tensor.data = data + e.begin;
    pos = e.end;
    prev = &e.tensor.name;
  }
  if (pos != data_size)
    fail("[safetensors] ", name, ": ", data_size - pos, " trailing bytes after the last tensor (data size ",
         data_size, ", tensors end at ", pos, ")");
  f.tensors_.reserve(entries.size());
  for (ParsedEntry& e : entries) {
    f.index_[e.tensor.name] = f.tensors_.size();
    f.tensors_.push_back(std::move(e.tensor));
  }
  return f;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  MappedFile map(path);
  SafetensorsFile f = parse(map.data(), map.size(), path);
  f.map_ = std::move(map);  // the mapping's address does not change on move
  return f;
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void write_safetensors_with(const std::string& path, const std::vector<StTensorOut>& tensors,
                            const std::map<std::string, std::string>& metadata,
                            const std::function<void(size_t, std::FILE*)>& fill) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return st_dtype_size(tensors[a].dtype) > st_dtype_size(tensors[b].dtype);
  });
  auto check_utf8 = [&](const std::string& s, const char* what) {
    if (find_invalid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size()) != std::string::npos)
      fail("[safetensors] ", path, ": ", what, " \"", s, "\" is not valid UTF-8");
  };
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : metadata) {
    check_utf8(k, "metadata key");
    check_utf8(v, "metadata value");
    meta[k] = v;
  }
  std::string header = "{";
  if (!metadata.empty()) header += "\"__metadata__\":" + meta.dump();
  std::unordered_set<std::string> seen;
  std::vector<uint64_t> sizes(tensors.size());
  uint64_t offset = 0;
  for (size_t i : order) {
    const StTensorOut& t = tensors[i];
    check_utf8(t.name, "tensor name");
    if (t.name == "__metadata__" || !seen.insert(t.name).second)
      fail("[safetensors] ", path, ": tensor name \"", t.name, "\" is reserved or repeated");
    int64_t numel = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(numel, d, &numel))
        fail("[safetensors] ", path, ": tensor \"", t.name, "\": invalid shape ", st_shape_str(t.shape));
    sizes[i] = static_cast<uint64_t>(numel) * st_dtype_size(t.dtype);
    nlohmann::json entry = {{"dtype", st_dtype_name(t.dtype)},
                            {"shape", t.shape},
                            {"data_offsets", {offset, offset + sizes[i]}}};
    if (header.size() > 1) header += ',';
    header += nlohmann::json(t.name).dump();
    header += ':';
    header += entry.dump();
    offset += sizes[i];
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  write_file_atomic_with(path, [&](std::FILE* f) {
    uint8_t len[8];
    for (int k = 0; k < 8; ++k) len[k] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * k));
    if (std::fwrite(len, 1, 8, f) != 8 || std::fwrite(header.data(), 1, header.size(), f) != header.size())
      fail("[safetensors] cannot write ", path);
    for (size_t i : order) {
      long before = std::ftell(f);
      fill(i, f);
      long after = std::ftell(f);
      if (after - before != static_cast<long>(sizes[i]))
        fail("[safetensors] ", path, ": tensor \"", tensors[i].name, "\": wrote ", after - before,
             " bytes, expected ", sizes[i]);
    }
  });
}

void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  for (const StTensorOut& t : tensors)
    if (!t.data && st_numel(t.shape) != 0)
      fail("[safetensors] ", path, ": tensor \"", t.name, "\" has no data");
  write_safetensors_with(path, tensors, metadata, [&](size_t i, std::FILE* f) {
    size_t n = static_cast<size_t>(st_numel(tensors[i].shape) * st_dtype_size(tensors[i].dtype));
    if (n && std::fwrite(tensors[i].data, 1, n, f) != n) fail("[safetensors] cannot write ", path);
  });
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {        // subnormal: normalise
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while (!(mant & 0x400));
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void tensor_to_f32(const StTensor& t, float* dst, int64_t numel, const std::string& file) {
  if (st_numel(t.shape) != numel)
    fail("[safetensors] ", file, ": tensor \"", t.name, "\": has ", st_numel(t.shape), " elements ",
         st_shape_str(t.shape), ", expected ", numel);
  tensor_range_to_f32(t, 0, numel, dst, file);
}

void tensor_range_to_f32(const StTensor& t, int64_t first, int64_t count, float* dst, const std::string& file) {
  GRPO_CHECK(first >= 0 && count >= 0 && first + count <= st_numel(t.shape), "[safetensors] ", file, ": tensor \"",
             t.name, "\": elements [", first, ", ", first + count, ") asked of ", st_numel(t.shape));
  switch (t.dtype) {
    case StDType::F32:
      if (count) std::memcpy(dst, t.data + 4 * first, static_cast<size_t>(count) * 4);
      return;
    case StDType::BF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * (first + i), 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case StDType::F16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * (first + i), 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    default:
      fail("[safetensors] ", file, ": tensor \"", t.name, "\": dtype ", st_dtype_name(t.dtype),
           " cannot be converted to f32 (expected F32, BF16 or F16)");
  }
}

}  // namespace grpo
