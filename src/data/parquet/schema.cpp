// Parquet schema tree, JSON shapes and value conversion (see schema.h).
#include "data/parquet/schema.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "core/error.h"

namespace grpo::parquet {
namespace {

constexpr int kMaxSchemaDepth = 64;  // nesting of groups (keeps levels well inside a byte)

struct Node {
  const SchemaElement* el = nullptr;
  int repetition = 0;
  int def = 0, rep = 0;
  std::vector<int> children;
  int leaf = -1;
  std::vector<std::string> parts;
};

class TreeBuilder {
 public:
  explicit TreeBuilder(const std::vector<SchemaElement>& els) : els_(els) {}

  std::vector<Node> nodes;
  std::vector<int> leaves;  // node index of each leaf, in order

  int build(size_t& next, int parent, int depth) {
    if (next >= els_.size()) fail("schema: the elements end before every group has its children");
    if (depth > kMaxSchemaDepth) fail("schema: nested deeper than ", kMaxSchemaDepth, " levels");
    const SchemaElement& e = els_[next++];
    const int id = static_cast<int>(nodes.size());
    nodes.emplace_back();
    Node n;
    n.el = &e;
    n.repetition = parent < 0 ? 0 : (e.repetition < 0 ? 0 : e.repetition);
    if (n.repetition > 2)
      fail("schema: field \"", e.name, "\" has repetition ", e.repetition, " (VECTOR or unknown): not supported");
    if (parent >= 0) {
      const Node& p = nodes[static_cast<size_t>(parent)];
      n.def = p.def + (n.repetition != 0 ? 1 : 0);
      n.rep = p.rep + (n.repetition == 2 ? 1 : 0);
      n.parts = p.parts;
      n.parts.push_back(e.name);
    }
    if (e.type >= 0) {
      if (parent < 0) fail("schema: the root is not a group");
      if (e.num_children > 0) fail("schema: field \"", e.name, "\" has a type and ", e.num_children, " children");
      if (e.type > 7) fail("schema: field \"", e.name, "\" has unknown physical type ", e.type);
      if (e.type == 7 && (e.type_length <= 0 || e.type_length > (1 << 24)))
        fail("schema: FIXED_LEN_BYTE_ARRAY field \"", e.name, "\" has length ", e.type_length);
      n.leaf = static_cast<int>(leaves.size());
      leaves.push_back(id);
    } else {
      if (e.num_children <= 0) fail("schema: group \"", e.name, "\" has no fields (", e.num_children, " children)");
      if (static_cast<size_t>(e.num_children) > els_.size() - next)
        fail("schema: group \"", e.name, "\" claims ", e.num_children, " children, only ", els_.size() - next,
             " elements follow");
    }
    nodes[static_cast<size_t>(id)] = n;
    for (int c = 0; c < (e.type >= 0 ? 0 : e.num_children); ++c) {
      const int child = build(next, id, depth + 1);
      nodes[static_cast<size_t>(id)].children.push_back(child);
    }
    return id;
  }

 private:
  const std::vector<SchemaElement>& els_;
};

bool is_list(const SchemaElement& e) { return e.logical.kind == Logical::List || e.converted_type == converted::kList; }
bool is_map(const SchemaElement& e) {
  return e.logical.kind == Logical::Map || e.converted_type == converted::kMap ||
         e.converted_type == converted::kMapKeyValue;
}

class FieldBuilder {
 public:
  explicit FieldBuilder(const std::vector<Node>& nodes) : nodes_(nodes) {}

  // The field of node n; `as_element`: n is a repeated node whose repetition the caller made a list of.
  Field make(int n, bool as_element) const {
    const Node& node = nodes_[static_cast<size_t>(n)];
    Field f;
    f.name = node.el->name;
    f.def = node.def;
    if (node.repetition == 2 && !as_element) {  // a bare repeated field: a list that is never null
      f.kind = Field::Kind::List;
      f.def = node.def - 1;
      f.elem_def = node.def;
      f.elem_rep = node.rep;
      f.children.push_back(make(n, true));
      return f;
    }
    if (node.leaf >= 0) {
      f.kind = Field::Kind::Leaf;
      f.leaf = node.leaf;
      return f;
    }
    if (node.children.size() == 1) {
      const Node& r = nodes_[static_cast<size_t>(node.children[0])];
      if (is_list(*node.el) && r.repetition == 2) {
        f.kind = Field::Kind::List;
        f.elem_def = r.def;
        f.elem_rep = r.rep;
        // LogicalTypes.md's backward-compatibility rules: the repeated field is the element itself when it
        // is a primitive, a group of several fields, or named "array" / "<list>_tuple"; otherwise it wraps
        // the element (the standard three-level form).
        const bool repeated_is_element = r.leaf >= 0 || r.children.size() > 1 || r.el->name == "array" ||
                                         r.el->name == node.el->name + "_tuple";
        f.children.push_back(repeated_is_element ? make(node.children[0], true) : make(r.children[0], false));
        return f;
      }
      if (is_map(*node.el) && r.repetition == 2 && r.leaf < 0 && r.children.size() <= 2) {
        f.kind = Field::Kind::Map;
        f.elem_def = r.def;
        f.elem_rep = r.rep;
        for (int c : r.children) f.children.push_back(make(c, false));
        return f;
      }
    }
    f.kind = Field::Kind::Struct;
    for (int c : node.children) f.children.push_back(make(c, false));
    return f;
  }

 private:
  const std::vector<Node>& nodes_;
};

void collect_paths(const Field& f, std::vector<PathStep>& stack, std::vector<std::vector<PathStep>>& paths) {
  if (f.kind == Field::Kind::Leaf) {
    stack.push_back({&f, -1});
    paths[static_cast<size_t>(f.leaf)] = stack;
    stack.pop_back();
    return;
  }
  for (size_t c = 0; c < f.children.size(); ++c) {
    stack.push_back({&f, static_cast<int>(c)});
    collect_paths(f.children[c], stack, paths);
    stack.pop_back();
  }
}

ValueKind kind_of(const SchemaElement& e, LeafColumn& leaf) {
  const Logical lk = e.logical.kind;
  const int32_t ct = e.converted_type;
  const bool decimal = lk == Logical::Decimal || ct == converted::kDecimal;
  leaf.scale = lk == Logical::Decimal ? e.logical.scale : e.scale;
  if (lk == Logical::Unknown) return ValueKind::Null;
  switch (static_cast<PhysicalType>(e.type)) {
    case PhysicalType::Boolean: return ValueKind::Bool;
    case PhysicalType::Int32:
      if (lk == Logical::Date || ct == converted::kDate) return ValueKind::Date;
      if (lk == Logical::Time || ct == converted::kTimeMillis) {
        leaf.unit = lk == Logical::Time ? e.logical.unit : TimeUnit::Millis;
        return ValueKind::Time;
      }
      if (decimal) return ValueKind::DecimalInt;
      if ((lk == Logical::Integer && !e.logical.is_signed) || ct == converted::kUint8 || ct == converted::kUint16 ||
          ct == converted::kUint32)
        return ValueKind::UInt32;
      return ValueKind::Int;
    case PhysicalType::Int64:
      if (lk == Logical::Timestamp || ct == converted::kTimestampMillis || ct == converted::kTimestampMicros) {
        leaf.unit = lk == Logical::Timestamp ? e.logical.unit
                                             : (ct == converted::kTimestampMillis ? TimeUnit::Millis : TimeUnit::Micros);
        leaf.utc = lk == Logical::Timestamp ? e.logical.utc : true;  // the converted types are UTC instants
        return ValueKind::Timestamp;
      }
      if (lk == Logical::Time || ct == converted::kTimeMicros) {
        leaf.unit = lk == Logical::Time ? e.logical.unit : TimeUnit::Micros;
        return ValueKind::Time;
      }
      if (decimal) return ValueKind::DecimalInt;
      if ((lk == Logical::Integer && !e.logical.is_signed) || ct == converted::kUint64) return ValueKind::UInt64;
      return ValueKind::Int;
    case PhysicalType::Int96: return ValueKind::Int96Timestamp;
    case PhysicalType::Float:
    case PhysicalType::Double: return ValueKind::Real;
    case PhysicalType::ByteArray:
      if (lk == Logical::String || lk == Logical::Enum || lk == Logical::Json || ct == converted::kUtf8 ||
          ct == converted::kEnum || ct == converted::kJson)
        return ValueKind::String;
      if (decimal) return ValueKind::DecimalBytes;
      return ValueKind::Binary;
    case PhysicalType::FixedLenByteArray:
      if (decimal) return ValueKind::DecimalBytes;
      if (lk == Logical::Uuid && e.type_length == 16) return ValueKind::Uuid;
      if (lk == Logical::Float16 && e.type_length == 2) return ValueKind::Float16;
      if (lk == Logical::String || ct == converted::kUtf8) return ValueKind::String;
      return ValueKind::Binary;
  }
  return ValueKind::Binary;
}

// Days since 1970-01-01 -> civil date (proleptic Gregorian).
void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

std::string date_text(int64_t days) {
  int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(y), m, d);
  return buf;
}

int64_t per_second(TimeUnit u) { return u == TimeUnit::Millis ? 1000 : u == TimeUnit::Micros ? 1000000 : 1000000000; }
int digits_of(TimeUnit u) { return u == TimeUnit::Millis ? 3 : u == TimeUnit::Micros ? 6 : 9; }

std::string time_text(int64_t in_day, TimeUnit u) {  // in_day in [0, one day) of the unit
  const int64_t ps = per_second(u);
  const int64_t secs = in_day / ps, frac = in_day % ps;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%0*lld", static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60), digits_of(u),
                static_cast<long long>(frac));
  return buf;
}

std::string timestamp_text(int64_t v, TimeUnit u, bool utc) {
  const int64_t per_day = 86400 * per_second(u);
  int64_t days = v / per_day, rest = v % per_day;
  if (rest < 0) {
    rest += per_day;
    --days;
  }
  return date_text(days) + "T" + time_text(rest, u) + (utc ? "Z" : "");
}

std::string decimal_text(__int128 unscaled, int32_t scale) {
  const bool neg = unscaled < 0;
  unsigned __int128 mag = neg ? -static_cast<unsigned __int128>(unscaled) : static_cast<unsigned __int128>(unscaled);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(mag % 10)));
    mag /= 10;
  } while (mag);
  if (scale > 0) {
    if (digits.size() <= static_cast<size_t>(scale)) digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    const size_t point = digits.size() - static_cast<size_t>(scale);
    digits = digits.substr(0, point) + "." + digits.substr(point);
  } else if (scale < 0) {
    if (digits != "0") digits.append(static_cast<size_t>(-scale), '0');
  }
  return neg ? "-" + digits : digits;
}

// Big-endian two's complement bytes (at most 16) -> integer.
__int128 unscaled_of(std::string_view b) {
  if (b.size() > 16) fail("DECIMAL value of ", b.size(), " bytes (at most 16 are supported)");
  if (b.empty()) return 0;
  unsigned __int128 v = (static_cast<uint8_t>(b[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<__int128>(v);
}

double half_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(mant + 1024, exp - 25);
}

std::string uuid_text(std::string_view b) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(hex[static_cast<uint8_t>(b[i]) >> 4]);
    s.push_back(hex[static_cast<uint8_t>(b[i]) & 15]);
  }
  return s;
}

void finish_maps_in(const Field& f, nlohmann::json& v) {
  if (v.is_null()) return;
  switch (f.kind) {
    case Field::Kind::Leaf: return;
    case Field::Kind::Struct:
      for (const Field& c : f.children)
        if (v.contains(c.name)) finish_maps_in(c, v[c.name]);
      return;
    case Field::Kind::List:
      for (auto& e : v) finish_maps_in(f.children[0], e);
      return;
    case Field::Kind::Map: {
      for (auto& kv : v)
        if (f.children.size() > 1) finish_maps_in(f.children[1], kv[1]);
      if (!f.string_keys) return;
      nlohmann::json obj = nlohmann::json::object();
      for (auto& kv : v) {
        if (!kv[0].is_string()) fail("a MAP key is null");
        obj[kv[0].get_ref<const std::string&>()] = f.children.size() > 1 ? std::move(kv[1]) : nlohmann::json();
      }
      v = std::move(obj);
      return;
    }
  }
}

bool tree_has_maps(const Field& f) {
  if (f.kind == Field::Kind::Map) return true;
  for (const Field& c : f.children)
    if (tree_has_maps(c)) return true;
  return false;
}

void mark_string_keys(Field& f, const std::vector<LeafColumn>& leaves) {
  if (f.kind == Field::Kind::Map && !f.children.empty() && f.children[0].kind == Field::Kind::Leaf)
    f.string_keys = leaves[static_cast<size_t>(f.children[0].leaf)].kind == ValueKind::String;
  for (Field& c : f.children) mark_string_keys(c, leaves);
}

}  // namespace

Schema::Schema(const std::vector<SchemaElement>& elements) {
  if (elements.empty()) fail("schema: no elements");
  TreeBuilder tb(elements);
  size_t next = 0;
  const int root = tb.build(next, -1, 0);
  if (next != elements.size()) fail("schema: ", elements.size() - next, " elements left after the root's tree");
  if (tb.leaves.empty()) fail("schema: no columns");
  for (size_t i = 0; i < tb.leaves.size(); ++i) {
    const Node& n = tb.nodes[static_cast<size_t>(tb.leaves[i])];
    LeafColumn leaf;
    leaf.index = static_cast<int>(i);
    leaf.parts = n.parts;
    for (const std::string& p : n.parts) leaf.path += (leaf.path.empty() ? "" : ".") + p;
    leaf.type = static_cast<PhysicalType>(n.el->type);
    leaf.type_length = n.el->type_length;
    leaf.max_def = n.def;
    leaf.max_rep = n.rep;
    leaf.kind = kind_of(*n.el, leaf);
    leaves_.push_back(std::move(leaf));
  }
  FieldBuilder fb(tb.nodes);
  const Node& r = tb.nodes[static_cast<size_t>(root)];
  for (size_t t = 0; t < r.children.size(); ++t) {
    fields_.push_back(fb.make(r.children[t], false));
    mark_string_keys(fields_.back(), leaves_);
    has_maps_ = has_maps_ || tree_has_maps(fields_.back());
  }
  paths_.resize(leaves_.size());
  std::vector<PathStep> stack;
  for (const Field& f : fields_) collect_paths(f, stack, paths_);
  for (size_t t = 0; t < fields_.size(); ++t)
    for (size_t l = 0; l < leaves_.size(); ++l)
      if (paths_[l].front().field == &fields_[t]) leaves_[l].top = static_cast<int>(t);
}

int Schema::field_index(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name) return static_cast<int>(i);
  return -1;
}

void append_json_values(const LeafColumn& leaf, const RawValues& raw, size_t first, size_t count,
                        std::vector<nlohmann::json>& out) {
  using nlohmann::json;
  const size_t have = raw.ints.size() + raw.reals.size() + raw.bytes.size();
  if (first > have || count > have - first) fail("values [", first, ", ", first + count, ") of ", have);
  const std::span<const int64_t> ints(raw.ints.data() + (raw.ints.empty() ? 0 : first), raw.ints.empty() ? 0 : count);
  const std::span<const double> reals(raw.reals.data() + (raw.reals.empty() ? 0 : first), raw.reals.empty() ? 0 : count);
  const std::span<const std::string_view> bytes(raw.bytes.data() + (raw.bytes.empty() ? 0 : first),
                                                raw.bytes.empty() ? 0 : count);
  switch (leaf.kind) {
    case ValueKind::Bool:
      for (int64_t v : ints) out.emplace_back(v != 0);
      return;
    case ValueKind::Int:
      for (int64_t v : ints) out.emplace_back(v);
      return;
    case ValueKind::UInt32:
      for (int64_t v : ints) out.emplace_back(static_cast<uint64_t>(static_cast<uint32_t>(v)));
      return;
    case ValueKind::UInt64:
      for (int64_t v : ints) out.emplace_back(static_cast<uint64_t>(v));
      return;
    case ValueKind::Real:
      for (double v : reals) out.emplace_back(v);
      return;
    case ValueKind::String:
      for (std::string_view v : bytes) out.emplace_back(std::string(v));
      return;
    case ValueKind::Binary:
      for (std::string_view v : bytes)
        out.emplace_back(json::binary(json::binary_t::container_type(v.begin(), v.end())));
      return;
    case ValueKind::Date:
      for (int64_t v : ints) out.emplace_back(date_text(v));
      return;
    case ValueKind::Time:
      for (int64_t v : ints) {
        if (v < 0 || v >= 86400 * per_second(leaf.unit)) fail("TIME value ", v, " is outside one day");
        out.emplace_back(time_text(v, leaf.unit));
      }
      return;
    case ValueKind::Timestamp:
      for (int64_t v : ints) out.emplace_back(timestamp_text(v, leaf.unit, leaf.utc));
      return;
    case ValueKind::Int96Timestamp:
      for (std::string_view v : bytes) {
        int64_t nanos;
        int32_t julian;
        std::memcpy(&nanos, v.data(), 8);
        std::memcpy(&julian, v.data() + 8, 4);
        if (nanos < 0 || nanos >= int64_t{86400} * 1000000000) fail("INT96 timestamp with ", nanos, " ns in its day");
        out.emplace_back(date_text(int64_t{julian} - 2440588) + "T" + time_text(nanos, TimeUnit::Nanos));
      }
      return;
    case ValueKind::DecimalInt:
      for (int64_t v : ints) out.emplace_back(decimal_text(v, leaf.scale));
      return;
    case ValueKind::DecimalBytes:
      for (std::string_view v : bytes) out.emplace_back(decimal_text(unscaled_of(v), leaf.scale));
      return;
    case ValueKind::Float16:
      for (std::string_view v : bytes)
        out.emplace_back(half_to_double(static_cast<uint16_t>(static_cast<uint8_t>(v[0]) | (static_cast<uint8_t>(v[1]) << 8))));
      return;
    case ValueKind::Uuid:
      for (std::string_view v : bytes) out.emplace_back(uuid_text(v));
      return;
    case ValueKind::Null: {
      for (size_t i = 0; i < count; ++i) out.emplace_back(nullptr);
      return;
    }
  }
}

void finish_maps(const Field& field, nlohmann::json& value) { finish_maps_in(field, value); }

}  // namespace grpo::parquet
