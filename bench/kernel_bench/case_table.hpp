#pragma once
// The cases that dsconv_bench registers, described for another program that times the same
// problems (bench/torch_baseline.py, PyTorch's baselines): dsconv_bench --case_table=FILE writes
// one JSON document with a row per case (the dsconv implementation's, without the
// implementation part of its name) and exits. The rows carry everything needed to build the
// problem again: shapes, stride, padding, activation, residual, the block's structure, and
// the minimum bytes and FLOPs that the report's bandwidth and roofline figures use.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "block_cases.hpp"
#include "cases.hpp"

namespace dsconv_bench {
namespace case_table_detail {

// A case's benchmark name up to its implementation: op/shape/b<batch>/type/layout.
inline std::string stem(const std::string& name) { return name.substr(0, name.rfind('/')); }

inline std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The fields every row has: name, op, batch, type, layout, bytes, flops.
template <class Case>
std::string common_fields(const Case& c, const std::string& name, const std::string& op) {
  std::ostringstream s;
  s.precision(17);
  s << "\"name\": " << quoted(stem(name)) << ", \"op\": " << quoted(op) << ", \"batch\": " << c.batch
    << ", \"type\": " << quoted(to_string(c.type)) << ", \"layout\": " << quoted(dsconv::to_string(c.data_layout))
    << ", \"bytes\": " << c.minimum_bytes() << ", \"flops\": " << c.minimum_flops();
  return s.str();
}

}  // namespace case_table_detail

inline std::string case_row(const bench_case& c) {
  using namespace case_table_detail;
  const layer& l = c.l;
  std::ostringstream s;
  s << "{" << common_fields(c, c.name(""), c.op()) << ", \"kind\": " << quoted(l.kind)
    << ", \"pass\": " << quoted(to_string(c.pass)) << ", \"c_in\": " << l.cin << ", \"c_out\": " << l.cout
    << ", \"h\": " << l.h_in << ", \"w\": " << l.h_in << ", \"kernel\": " << l.k << ", \"stride\": " << l.stride
    << ", \"pad\": " << l.pad << ", \"groups\": " << (l.depthwise() ? l.cin : 1)
    << ", \"act\": " << quoted(dsconv::to_string(c.activation())) << ", \"residual\": " << (c.residual() ? "true" : "false")
    << "}";
  return s.str();
}

inline std::string case_row(const block_case& c) {
  using namespace case_table_detail;
  const dsconv::inverted_residual_params p = c.params();
  std::ostringstream s;
  // block: the block's number in its network (1 = the first inverted-residual block).
  s << "{" << common_fields(c, c.name(""), "block") << ", \"model\": " << quoted(c.block.model)
    << ", \"input\": " << c.block.input << ", \"block\": " << c.block.block << ", \"c_in\": " << p.c_in
    << ", \"expanded\": " << p.expanded << ", \"c_out\": " << p.c_out << ", \"h\": " << p.h << ", \"w\": " << p.w
    << ", \"kernel\": " << p.kernel << ", \"stride\": " << p.stride << ", \"se_channels\": " << p.se_channels
    << ", \"act\": " << quoted(dsconv::to_string(p.act)) << ", \"residual\": " << (p.residual ? "true" : "false")
    << "}";
  return s.str();
}

// Writes the table of the dsconv cases among `cases` and `blocks` (a block's fused and unfused
// variants are one problem: its first row stands for it). Returns an error message, or empty.
inline std::string write_case_table(const std::string& path, const std::vector<bench_case>& cases,
                                    const std::vector<block_case>& blocks) {
  std::vector<std::string> rows;
  for (const bench_case& c : cases)
    if (c.impl == implementation::dsconv) rows.push_back(case_row(c));
  std::string last_block;
  for (const block_case& c : blocks) {
    const std::string stem = case_table_detail::stem(c.name(""));
    if (c.impl == block_implementation::baseline || c.impl == block_implementation::extra_baseline || stem == last_block)
      continue;
    last_block = stem;
    rows.push_back(case_row(c));
  }
  std::ofstream out(path);
  out << "{\"cases\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) out << "  " << rows[i] << (i + 1 < rows.size() ? ",\n" : "\n");
  out << "]}\n";
  out.close();
  return out ? std::string() : "cannot write the case table to " + path;
}

}  // namespace dsconv_bench
