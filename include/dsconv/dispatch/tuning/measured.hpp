#pragma once
// The per-architecture tuning tables' formats (the generated block_fusion_tables.hpp and
// variant_tables.hpp hold them; block_fusion.hpp and variant_choice.hpp read them): a table is
// one GPU run's measurements, counted only for the kernels' revision it measured, and a call
// takes the row of its own case measured at the batch nearest its own.

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

// One measured block case: the block's shape, batch and element type ('f' float, 'h' half, 'b'
// bfloat16), and the fused and unfused times in microseconds.
struct block_fusion_row {
  int c_in, expanded, c_out, kernel, stride, h, se_channels, batch;
  char type;
  double fused_us, unfused_us;
};

// One architecture's table (its revision: the fused kernel's, fused_block_revision).
using block_fusion_table = measured_table<block_fusion_row>;

// One measured case: op 'd' (depthwise: c_in = c_out channels, a square kernel x kernel filter of
// stride `stride`, padding kernel / 2) or 'p' (1x1: c_in -> c_out), an h x h input map, batch,
// element type (type_tag), layout ('c' NCHW, 'h' NHWC), and the fastest variant (to_string's
// name) with its time in microseconds.
struct variant_row {
  char op;
  int c_in, c_out, kernel, stride, h, batch;
  char type, layout;
  const char* variant;
  double us;
};

// One architecture's table (its revision: the kernels', variant_kernels_revision).
using variant_table = measured_table<variant_row>;

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
