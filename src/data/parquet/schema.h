// A Parquet schema as this reader uses it: the flat SchemaElement list made into a tree; its leaves (one per
// column chunk) with their maximum definition / repetition levels and how their values become JSON; and the
// JSON shape of each top-level column (fields), where LIST and MAP annotations (and their legacy forms) and
// bare repeated fields become arrays, groups become objects.
//
// Values as JSON: BOOLEAN -> bool; integers -> numbers (unsigned when annotated so); FLOAT / DOUBLE ->
// numbers; STRING / ENUM / JSON -> strings; other BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY -> binary (the bytes);
// DATE -> "YYYY-MM-DD"; TIME -> "HH:MM:SS.fff[fff[fff]]"; TIMESTAMP and INT96 -> ISO 8601
// "YYYY-MM-DDTHH:MM:SS.fff[fff[fff]]" with "Z" when adjusted to UTC; DECIMAL -> its exact decimal string;
// UUID -> its 36-character text; FLOAT16 -> number; UNKNOWN (always null) -> null. MAP -> an object when
// the keys are strings, else an array of [key, value] pairs.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/parquet/encodings.h"
#include "data/parquet/metadata.h"

namespace grpo::parquet {

enum class ValueKind {
  Bool, Int, UInt32, UInt64, Real, String, Binary, Date, Time, Timestamp, Int96Timestamp, DecimalInt,
  DecimalBytes, Float16, Uuid, Null,
};

struct LeafColumn {
  int index = 0;                    // among the leaves: the column chunk's position in every row group
  std::string path;                 // dotted, e.g. "prompt.list.element.content"
  std::vector<std::string> parts;   // path_in_schema
  PhysicalType type = PhysicalType::Int32;
  int32_t type_length = 0;
  int max_def = 0, max_rep = 0;
  ValueKind kind = ValueKind::Int;
  int32_t scale = 0;                // DECIMAL
  TimeUnit unit = TimeUnit::Millis;  // TIME, TIMESTAMP
  bool utc = false;                 // TIMESTAMP
  int top = 0;                      // the top-level field it belongs to
};

struct Field {
  enum class Kind { Leaf, Struct, List, Map };
  Kind kind = Kind::Leaf;
  std::string name;
  int def = 0;       // definition level from which the value is not null
  int elem_def = 0;  // List / Map: definition level from which it has an element
  int elem_rep = 0;  // List / Map: repetition level of its elements
  int leaf = -1;     // Leaf: index into Schema::leaves()
  bool string_keys = false;    // Map: keys are strings (the map becomes an object)
  std::vector<Field> children;  // Struct: fields; List: the element; Map: key, value
};

// One step of a leaf's path: a field, and which child of it the path goes on through.
struct PathStep {
  const Field* field;
  int child;
};

class Schema {
 public:
  explicit Schema(const std::vector<SchemaElement>& elements);  // throws grpo::Error saying what is wrong
  Schema(const Schema&) = delete;
  Schema& operator=(const Schema&) = delete;

  const std::vector<Field>& fields() const { return fields_; }
  const std::vector<LeafColumn>& leaves() const { return leaves_; }
  const std::vector<PathStep>& leaf_path(int leaf) const { return paths_[static_cast<size_t>(leaf)]; }
  bool has_maps() const { return has_maps_; }
  int field_index(const std::string& name) const;  // -1 when absent

 private:
  std::vector<Field> fields_;
  std::vector<LeafColumn> leaves_;
  std::vector<std::vector<PathStep>> paths_;
  bool has_maps_ = false;
};

// Appends the JSON values of raw physical values [first, first + count) of `leaf`.
void append_json_values(const LeafColumn& leaf, const RawValues& raw, size_t first, size_t count,
                        std::vector<nlohmann::json>& out);

// Turns a row's maps (arrays of [key, value] pairs while assembling) into objects where the keys are strings.
void finish_maps(const Field& field, nlohmann::json& value);

}  // namespace grpo::parquet
