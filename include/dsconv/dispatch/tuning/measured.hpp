#pragma once
// What the per-architecture tuning tables share (block_fusion.hpp, variant_choice.hpp): a
// table is one GPU run's measurements, counted only for the kernels' revision it measured, and
// a call takes the row of its own case measured at the batch nearest its own.

#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "../../types.hpp"

namespace dsconv {
namespace detail {
namespace tuning {

// One architecture's table of rows Row: where and when it was measured, on which revision of
// the kernels it measured.
template <class Row>
struct measured_table {
  const char* arch;  // device_properties::arch, e.g. "sm_90"; "" in the placeholder of no table
  const char* device;
  const char* measured;  // date and commit of the run
  int revision;
  const Row* rows;
  std::size_t count;
};

// The element type as the tables name it: 'f' float, 'h' half, 'b' bfloat16.
template <class T>
constexpr char type_tag() {
  return std::is_same<T, half>::value ? 'h' : std::is_same<T, bfloat16>::value ? 'b' : 'f';
}

// The last of `count` tables measured on architecture `arch` with kernels of revision
// `revision`; null where none was.
template <class Row>
const measured_table<Row>* table_of(const char* arch, int revision, const measured_table<Row>* tables, std::size_t count) {
  const measured_table<Row>* found = nullptr;
  for (std::size_t i = 0; i < count; ++i)
    if (tables[i].arch[0] && std::strcmp(tables[i].arch, arch) == 0 && tables[i].revision == revision) found = &tables[i];
  return found;
}

// The row of `table` that `same` accepts, measured at the batch nearest `batch` (in powers of
// two; the smaller of two as near); null where `same` accepts none.
template <class Row, class Same>
const Row* nearest_batch(const measured_table<Row>& table, int batch, Same&& same) {
  const Row* best = nullptr;
  double nearest = 0;
  for (std::size_t i = 0; i < table.count; ++i) {
    const auto& r = table.rows[i];
    if (!same(r)) continue;
    const double distance = std::fabs(std::log2(static_cast<double>(r.batch) / batch));
    if (!best || distance < nearest || (distance == nearest && r.batch < best->batch)) best = &r, nearest = distance;
  }
  return best;
}

}  // namespace tuning
}  // namespace detail
}  // namespace dsconv
