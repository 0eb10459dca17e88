// dsconv::inverted_residual_forward against the double-precision composition of the reference
// layers: hand-computed blocks, every block of MobileNetV2 and EfficientNet-B0 (32x32 input),
// odd shapes in float, half and bfloat16, both variants wherever their contract says they
// run; bad input; determinism; batch-norm folding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "block_tensors.hpp"
#include "blocks.hpp"
#include "support/accuracy.hpp"
#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::block_variant;
using dsconv::inverted_residual_params;
using dsconv::layout;
using dsconv::status;
using namespace dsconv_test;

using dsconv_bench::block_tensors;

// A block's tensors, random (support/test_data.hpp), without biases where `bias` is false.
template <class T>
block_tensors<T> random_block(const inverted_residual_params& p, bool bias = true) {
  return block_tensors<T>(p, [&](std::size_t count, int, bool is_bias) {
    return is_bias && !bias ? std::vector<T>() : random_tensor<T>(count);
  });
}

// The tensors on the device (between NaN guard zones).
template <class T>
struct device_block {
  std::vector<std::unique_ptr<device_input<T>>> held;
  dsconv::inverted_residual_weights<T> w;
  const T* input = nullptr;

  explicit device_block(const block_tensors<T>& t) {
    auto up = [&](const std::vector<T>& v) -> const T* {
      if (v.empty()) return nullptr;
      held.push_back(std::make_unique<device_input<T>>(v));
      return held.back()->data();
    };
    input = up(t.input);
    w = t.weights(up);
  }
};

std::size_t output_count(const inverted_residual_params& p) {
  return static_cast<std::size_t>(p.n) * p.c_out * p.out_h() * p.out_w();
}

// The bound of a correct block (accuracy.hpp): the composition's term norms from the reference
// run on the squared tensors without activations or squeeze-excitation (each bounds its
// layer's terms: |act(z)| <= 1.1 |z|, the gate is below 1), and the intermediate tensors'
// rounding to T (the unfused sequence stores them in T) as an operand rounding; for float on
// NVIDIA's tensor cores, the 1x1s' operands' rounding to TF32 (allow_tf32) or to two TF32 parts
// likewise.
template <class T>
error_bound block_bound(inverted_residual_params p, const block_tensors<T>& t) {
  const int products = std::max({p.c_in, p.kernel * p.kernel, p.expanded});
  p.act = activation::none, p.se_channels = 0;
  block_tensors<float> sq;
  sq.input = squares(t.input), sq.we = squares(t.we), sq.be = squares(t.be), sq.wd = squares(t.wd);
  sq.bd = squares(t.bd), sq.wp = squares(t.wp), sq.bp = squares(t.bp);
  const double rounding = !std::is_same<T, float>::value ? unit_roundoff<T>()
                                                         : float_matrix_operand_unit(current_device().matrix, p.allow_tf32);
  error_bound b{std::vector<double>(output_count(p)), products, rounding};
  REQUIRE(dsconv::reference::inverted_residual_forward(p, sq.weights(), sq.input.data(), b.term_norms.data()) ==
          status::success);
  for (double& v : b.term_norms) v = std::sqrt(v);
  return b;
}

// Whether `variant` must run `p` by its documented contract (independent of the planner):
// unfused every block, fused NHWC blocks with squeeze-excitation (the kernel expands and
// filters) where an image's depthwise output has fewer than 2^31 elements, and without it where
// c_out <= 512 (the kernel projects too), where the shared memory of a one-pixel tile
// (kernels/block/fused_tile.hpp's regions and pitches) fits a block's share.
bool supports(block_variant variant, const inverted_residual_params& p) {
  if (variant != block_variant::fused) return true;
  const bool projects = p.se_channels == 0;
  if (p.data_layout != layout::nhwc || (projects && p.c_out > 512)) return false;
  if (!projects && static_cast<long long>(p.out_h()) * p.out_w() * p.expanded >= (1LL << 31)) return false;
  const long long taps = static_cast<long long>(p.kernel) * p.kernel, slice = 16;
  // The pitches: input, expanded slice (none without expand), expand and project weights.
  const bool two = p.stride % 4 == 2, odd = p.stride % 2 == 1;
  long long in = p.c_in, x = 0;
  if (p.has_expand()) {
    x = two ? 24 : odd ? 16 : 17;
    if (two && p.c_in % 32 == 16)
      in = p.c_in + 8;
    else if (p.c_in * (two ? 2 : 1) % 32 == 0)
      in = p.c_in + 1;
  } else {
    while (odd && in % 32 != 16) ++in;
    while (two && in % 16 != 8) ++in;
  }
  long long out = p.c_out;
  while (out % 4 != 2) ++out;
  const long long expand_weights = p.has_expand() ? p.c_in * (slice + 2) : 0;
  const long long project_weights = projects ? slice * out : 0;
  // biases, input with halo, mask, expanded halo, depthwise weights, depthwise outputs (or the
  // 512 threads' pool sums), expand or project weights; projecting, the last output group's
  // rows (4) past d.
  const long long d = 2 * slice + taps * (in + 1 + x) + slice * taps;
  const long long floats = std::max(d + (projects ? slice : 512) + std::max(expand_weights, project_weights),
                                    projects ? d + 4 * slice : 0);
  const dsconv::platform::device_properties dev = current_device();
  const long long limit = std::min<long long>({48 * 1024, static_cast<long long>(dev.shared_memory_per_block),
                                               static_cast<long long>(dev.shared_memory_per_multiprocessor -
                                                                      dev.shared_memory_reserved_per_block)});
  return floats * 4 <= limit;
}

// Runs `variant` with a workspace of the size the library asks for; the output, checked for
// writes outside it.
template <class T>
std::vector<T> run_block(const inverted_residual_params& p, block_variant variant, const device_block<T>& d,
                         status expected = status::success) {
  dsconv::device_buffer<char> workspace;
  const std::size_t bytes = dsconv::inverted_residual_workspace_size<T>(p);
  REQUIRE(bytes > 0);
  REQUIRE(workspace.allocate(bytes) == status::success);
  dsconv::inverted_residual_options options;
  options.variant = variant, options.workspace = workspace.data(), options.workspace_bytes = bytes;
  guarded_output<T> out(output_count(p));
  REQUIRE(dsconv::inverted_residual_forward(p, options, d.w, d.input, out.data()) == expected);
  REQUIRE(dsconv::synchronize() == status::success);
  return out.download_checked();
}

std::string describe(const inverted_residual_params& p) {
  std::ostringstream s;
  s << "block n " << p.n << ", " << p.c_in << "x" << p.h << "x" << p.w << " " << dsconv::to_string(p.data_layout)
    << ", expand " << p.expanded << ", k" << p.kernel << " s" << p.stride << ", se " << p.se_channels << ", c_out "
    << p.c_out << ", " << dsconv::to_string(p.act) << (p.residual ? ", residual" : "") << (p.allow_tf32 ? ", TF32 allowed" : "");
  return s.str();
}

// Every variant that must run `p`, and automatic, against the reference composition.
template <class T>
void check_block(const inverted_residual_params& p, bool bias = true) {
  INFO(describe(p) << (bias ? ", biases" : ", no biases"));
  const block_tensors<T> t = random_block<T>(p, bias);
  std::vector<double> ref(output_count(p));
  REQUIRE(dsconv::reference::inverted_residual_forward(p, t.weights(), t.input.data(), ref.data()) == status::success);
  const error_bound bound = block_bound(p, t);
  const device_block<T> d(t);
  for (const block_variant v : variants_with_automatic(dsconv::all_block_variants)) {
    INFO("variant " << dsconv::to_string(v));
    const status can = dsconv::can_implement<T>(v, p);
    CHECK((can == status::success) == supports(v, p));
    if (can != status::success) continue;
    check_close(run_block(p, v, d), ref, bound);
  }
}

inverted_residual_params block(int n, int c_in, int h, int w, int expanded, int kernel, int stride, int se, int c_out,
                               activation act, bool residual, layout l) {
  inverted_residual_params p;
  p.n = n, p.c_in = c_in, p.h = h, p.w = w, p.expanded = expanded, p.kernel = kernel, p.stride = stride;
  p.se_channels = se, p.c_out = c_out, p.act = act, p.residual = residual, p.data_layout = l;
  return p;
}

}  // namespace

TEST_CASE("inverted_residual: hand-computed blocks, with and without squeeze-excitation", "[block]") {
  // x = 2; expand [1, -1] + 0.5 -> relu [2.5, 0]; depthwise 3x3 on a 1x1 map (centre taps 2
  // and 3) + 1 -> relu [6, 1]; project [1, 10] + 0.25 -> 16.25; residual -> 18.25. With
  // squeeze-excitation: reduce [1, 1] -> relu 7; expand [0, 1] + [0, -7] -> sigmoid [0.5, 0.5];
  // scaled [3, 0.5]; project 3 + 5 + 0.25 + 2 = 10.25.
  for (const layout l : all_layouts)
    for (const int se : {0, 1}) {
      const inverted_residual_params p = block(1, 1, 1, 1, 2, 3, 1, se, 1, activation::relu, true, l);
      INFO(describe(p));
      block_tensors<float> t;
      t.input = {2}, t.we = {1, -1}, t.be = {0.5f, 0.5f};
      t.wd = {0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0}, t.bd = {1, 1};
      if (se) t.rw = {1, 1}, t.rb = {0}, t.xw = {0, 1}, t.xb = {0, -7};
      t.wp = {1, 10}, t.bp = {0.25f};
      const double expected = se ? 10.25 : 18.25;
      double ref = 0;
      REQUIRE(dsconv::reference::inverted_residual_forward(p, t.weights(), t.input.data(), &ref) == status::success);
      CHECK(ref == expected);
      const device_block<float> d(t);
      for (const block_variant v : dsconv::all_block_variants) {
        if (!supports(v, p)) continue;
        INFO("variant " << dsconv::to_string(v));
        CHECK(run_block(p, v, d) == std::vector<float>{static_cast<float>(expected)});
      }
    }
}

TEST_CASE("inverted_residual: every block of MobileNetV2 and EfficientNet-B0 (32x32 input), both layouts",
          "[block][network]") {
  int i = 0;
  for (const dsconv_bench::network_block& b : dsconv_bench::all_blocks()) {
    if (b.input != 32) continue;
    INFO(b.name());
    for (const layout l : all_layouts) check_block<float>(b.at(1 + i % 2, l), i % 3 != 0);
    ++i;
  }
  CHECK(i == 33);  // 17 MobileNetV2 blocks, 16 EfficientNet-B0 blocks
}

// (allow_tf32: float's 1x1s on NVIDIA's tensor cores, ignored by the other types)
template <class T>
void check_odd_shapes(bool allow_tf32) {
  for (const layout l : all_layouts)
    for (inverted_residual_params p : {block(2, 5, 9, 7, 13, 3, 2, 0, 7, activation::relu6, false, l),
                                       block(1, 8, 11, 13, 40, 5, 1, 0, 8, activation::silu, true, l),
                                       block(2, 12, 6, 5, 12, 3, 1, 3, 12, activation::hardswish, true, l),
                                       block(3, 3, 5, 5, 3, 3, 2, 0, 9, activation::relu, false, l),
                                       block(1, 4, 40, 37, 24, 3, 1, 0, 4, activation::sigmoid, true, l),
                                       block(1, 6, 7, 9, 70, 5, 2, 5, 11, activation::none, false, l),
                                       // (squeeze-excitation on a map of several fused tiles: the
                                       // fused kernel's blocks run under several thread schedules)
                                       block(2, 16, 24, 20, 64, 3, 1, 4, 16, activation::silu, true, l)}) {
      p.allow_tf32 = allow_tf32;
      check_block<T>(p, p.c_in != 8);  // (one block without biases)
    }
}

TEMPLATE_TEST_CASE("inverted_residual: odd shapes, partial slices and tiles, every activation", "[block][shapes]", float,
                   dsconv::half, dsconv::bfloat16) {
  check_odd_shapes<TestType>(false);
}

// The fused kernel's depthwise step in strips (kernels/block/fused_depthwise.hpp): each of its
// four forms (3x3 and 5x5 at strides 1 and 2), projecting in the kernel and not (with
// squeeze-excitation), with a partial slice of expanded channels, on tiles whose rows end in a
// strip that overlaps the one before (10 and 9 outputs wide), against the reference.
template <class T>
void check_strips() {
  namespace d = dsconv::detail;
  for (const int kernel : {3, 5})
    for (const int stride : {1, 2})
      for (const int se : {0, 4}) {
        const int out_w = stride == 1 ? 10 : 9;
        const inverted_residual_params p =
            block(1, 8, 4, (out_w - 1) * stride + 1, 24, kernel, stride, se, 8,
                  se ? activation::silu : activation::relu6, stride == 1, layout::nhwc);
        INFO(describe(p));
        d::fused_block_plan plan;
        REQUIRE(d::plan_fused_block<T>(p, current_device(), plan));
        INFO("tile " << plan.tile.rows << "x" << plan.tile.cols);
        // (the strips, the last of a row overlapping: what this test is for)
        REQUIRE(plan.tile.strip_pair > 0);
        REQUIRE(plan.tile.cols % d::fused_strip_outputs != 0);
        check_block<T>(p);
      }
}

TEMPLATE_TEST_CASE("inverted_residual: the fused depthwise step in strips, every form, a row's last strip overlapping",
                   "[block][shapes]", float, dsconv::half, dsconv::bfloat16) {
  check_strips<TestType>();
}

// float blocks whose 1x1 layers may round to TF32: on NVIDIA's tensor cores (the unfused
// sequence's layers, and the fused kernel's expand and project steps, its operands rounded as
// it stages them), elsewhere exact fp32 as without it; the bound allows the rounding.
TEST_CASE("inverted_residual: float blocks with allow_tf32", "[block][shapes][tf32]") {
  check_odd_shapes<float>(true);
  int i = 0;
  for (const dsconv_bench::network_block& b : dsconv_bench::all_blocks()) {
    if (b.input != 32 || i++ % 4 != 0) continue;  // (a quarter of them: every kind of block)
    INFO(b.name());
    inverted_residual_params p = b.at(1, layout::nhwc);
    p.allow_tf32 = true;
    check_block<float>(p);
  }
}

#if defined(DSCONV_PLATFORM_HOST)  // (devices of the host platform only)
// The SIMT project of 16-bit blocks at warp 32: on a device of that width without a matrix
// unit (every profile of width 32 has one, which takes those blocks), as before Turing.
TEMPLATE_TEST_CASE("inverted_residual: 16-bit blocks on a warp-32 device without a matrix unit", "[block][shapes]",
                   dsconv::half, dsconv::bfloat16) {
  const dsconv::platform::device_properties before = dsconv::host::device();
  if (before.warp_size != 32) return;  // (the profiles of width 64 include one without a unit: gfx906)
  dsconv::platform::device_properties plain = before;
  plain.matrix = dsconv::platform::matrix_unit::none;
  std::snprintf(plain.name, sizeof plain.name, "%s", "warp32-no-matrix-unit");
  REQUIRE(dsconv::host::set_device(plain) == status::success);
  struct restore {
    dsconv::platform::device_properties device;
    ~restore() { dsconv::host::set_device(device); }
  } const restored{before};
  for (const layout l : all_layouts) {
    check_block<TestType>(block(2, 5, 9, 7, 13, 3, 2, 0, 7, activation::relu6, false, l));
    check_block<TestType>(block(1, 8, 11, 13, 40, 5, 1, 0, 8, activation::silu, true, l), false);
  }
}

#endif

TEST_CASE("inverted_residual: two runs give the same bits", "[block]") {
  for (const block_variant v : dsconv::all_block_variants)
    for (const int se : {0, 4}) {
      const inverted_residual_params p = block(2, 16, 14, 14, 96, 3, 2, se, 24, activation::silu, false, layout::nhwc);
      const block_tensors<float> t = random_block<float>(p);
      const device_block<float> d(t);
      CHECK(run_block(p, v, d) == run_block(p, v, d));
    }
}

TEST_CASE("inverted_residual: the planner takes the fused kernel only where it runs the block", "[block]") {
  for (const dsconv_bench::network_block& b : dsconv_bench::all_blocks()) {
    if (b.input != 224) continue;
    for (const layout l : all_layouts) {
      const inverted_residual_params p = b.at(8, l);
      INFO(b.name() << " " << dsconv::to_string(l));
      // Without a workspace only the fused kernel of blocks without squeeze-excitation can run:
      // automatic takes it wherever it can.
      const bool fused_runs = dsconv::can_implement<float>(block_variant::fused, p) == status::success;
      const block_variant chosen = dsconv::select_variant<float>(p, dsconv::inverted_residual_options{});
      CHECK(chosen == (fused_runs && p.se_channels == 0 ? block_variant::fused : block_variant::unfused));
      CHECK(fused_runs == supports(block_variant::fused, p));
      // With a workspace of the size the library asks for, either variant can run.
      CHECK(dsconv::inverted_residual_workspace_size<float>(p) > 0);
    }
  }
}

// The planner fuses a block exactly where the table of the device's architecture measured the
// fused kernel at least fusion_min_speedup faster on that block and type (and the fused kernel
// runs it here), and nowhere on an architecture without a table.
void check_planner_follows_measurements() {
  namespace t = dsconv::detail::tuning;
  const dsconv::platform::device_properties dev = current_device();
  INFO("device " << dev.name << ", architecture " << dev.arch);
  const t::block_fusion_table* table = nullptr;
  for (const t::block_fusion_table& candidate : t::block_fusion_tables)
    if (std::string(candidate.arch) == dev.arch && candidate.revision == t::fused_block_revision) table = &candidate;
  if (!table) {
    for (const dsconv_bench::network_block& b : dsconv_bench::all_blocks()) {
      const inverted_residual_params p = b.at(8, layout::nhwc);
      INFO(b.name());
      CHECK(dsconv::detail::explain_choice<float>(p, dsconv::inverted_residual_workspace_size<float>(p)).variant ==
            block_variant::unfused);
    }
    return;
  }
  int fused = 0;
  for (std::size_t i = 0; i < table->count; ++i) {
    const t::block_fusion_row& r = table->rows[i];
    if (r.type != 'f') continue;  // (float's rows: the 16-bit ones follow the same rule, from the same code)
    inverted_residual_params p = block(r.batch, r.c_in, r.h, r.h, r.expanded, r.kernel, r.stride, r.se_channels,
                                       r.c_out, activation::relu6, r.stride == 1 && r.c_in == r.c_out, layout::nhwc);
    INFO("row " << i << ": " << r.c_in << "->" << r.expanded << "->" << r.c_out << " k" << r.kernel << " s" << r.stride
                << " h" << r.h << " se" << r.se_channels << " batch " << r.batch);
    const bool runs = dsconv::can_implement<float>(block_variant::fused, p) == status::success;
    const dsconv::detail::block_choice c =
        dsconv::detail::explain_choice<float>(p, dsconv::inverted_residual_workspace_size<float>(p));
    const bool faster = r.unfused_us >= t::fusion_min_speedup * r.fused_us;
    CHECK(c.variant == (runs && faster ? block_variant::fused : block_variant::unfused));
    CHECK(c.reason.find(table->device) != std::string::npos);
    fused += c.variant == block_variant::fused;
  }
  CHECK(fused > 0);
}

TEST_CASE("inverted_residual: the planner fuses only what its architecture measured faster", "[block]") {
  check_planner_follows_measurements();
#if defined(DSCONV_PLATFORM_HOST)
  // And as an sm_90, the architecture measured, where this run's profile has its warp width.
  const dsconv::platform::device_properties before = dsconv::host::device();
  if (before.warp_size != 32) return;
  REQUIRE(dsconv::host::set_device("sm90") == status::success);
  struct restore {
    dsconv::platform::device_properties device;
    ~restore() { dsconv::host::set_device(device); }
  } const restored{before};
  check_planner_follows_measurements();
#endif
}

TEST_CASE("inverted_residual: a measurement decides at the nearest batch, for its architecture and kernel only",
          "[block]") {
  namespace t = dsconv::detail::tuning;
  // One block measured at batch 8 (fused 2x faster) and 32 (fused 2x slower) in float.
  const t::block_fusion_row rows[] = {{24, 144, 24, 3, 1, 56, 0, 8, 'f', 10.0, 20.0},
                                      {24, 144, 24, 3, 1, 56, 0, 32, 'f', 40.0, 20.0}};
  const t::block_fusion_table tables[] = {{"sm_test", "a test GPU", "today", t::fused_block_revision, rows, 2},
                                          {"sm_old", "an old GPU", "before", t::fused_block_revision - 1, rows, 2}};
  inverted_residual_params p = block(1, 24, 56, 56, 144, 3, 1, 0, 24, activation::relu6, true, layout::nhwc);
  const auto fuse_at = [&](int n, const char* arch) {
    p.n = n;
    const t::fusion_verdict v = t::measured_fusion<float>(arch, p, tables, 2);
    return v.row ? (v.fuse ? 1 : 0) : -1;  // -1: nothing measured
  };
  CHECK(fuse_at(1, "sm_test") == 1);
  CHECK(fuse_at(8, "sm_test") == 1);
  CHECK(fuse_at(16, "sm_test") == 1);  // as near to 8 as to 32: the smaller
  CHECK(fuse_at(17, "sm_test") == 0);
  CHECK(fuse_at(128, "sm_test") == 0);
  CHECK(fuse_at(8, "sm_old") == -1);  // measured on another revision of the fused kernel
  CHECK(fuse_at(8, "sm_none") == -1);
  p.n = 8;
  CHECK(t::measured_fusion<dsconv::half>("sm_test", p, tables, 2).row == nullptr);  // half was not measured
  p.allow_tf32 = true;  // (float that allows TF32 runs other kernels: its own type, not measured)
  CHECK(t::measured_fusion<float>("sm_test", p, tables, 2).row == nullptr);
  p.allow_tf32 = false;
  p.c_out = 32, p.residual = false;
  CHECK(t::measured_fusion<float>("sm_test", p, tables, 2).row == nullptr);  // another block
  CHECK(t::measured_fusion<float>("sm_none", p, tables, 2).reason("sm_none") == "unfused: no fusion measurement on sm_none");
}

// The fused kernel's expand step (blocks that expand) and project step (blocks without
// squeeze-excitation) may run on the device's matrix unit exactly where the unit multiplies the
// type (half on every unit, bfloat16 on sm_80's and AMD's, float on AMD's in fp32 and on
// sm_80's in TF32 where the caller allows it), and do where the unit's tile lets as many
// blocks reside as the SIMT cores' (each searched alone) or more, and where as many, moves no
// more bytes; such a plan's output tiles cover the tile within the unit's limits, and where
// the block expands its staged input's K stages cover the halo and its regions hold what the
// kernel stores there (fused_tile.hpp).
template <class T>
void check_matrix_unit_plans(const dsconv::platform::device_properties& dev, bool allow_tf32) {
  namespace d = dsconv::detail;
  using dsconv::platform::matrix_unit;
  const bool multiplies = std::is_same<T, dsconv::half>::value ? dev.matrix != matrix_unit::none
                          : std::is_same<T, dsconv::bfloat16>::value
                              ? dev.matrix == matrix_unit::mma_sync || dev.matrix == matrix_unit::mfma
                              : dev.matrix == matrix_unit::mfma || (dev.matrix == matrix_unit::mma_sync && allow_tf32);
  for (const dsconv_bench::network_block& b : dsconv_bench::all_blocks()) {
    inverted_residual_params p = b.at(8, layout::nhwc);
    p.allow_tf32 = allow_tf32;
    INFO(b.name() << " on " << dev.name << (allow_tf32 ? ", TF32 allowed" : ""));
    const bool projects = p.se_channels == 0;
    CHECK(d::fused_block_on_matrix_unit<T>(p, dev) == (multiplies && (projects || p.has_expand())));
    d::fused_block_plan plan;
    if (!d::plan_fused_block<T>(p, dev, plan)) continue;
    const d::fused_block_tile& t = plan.tile;
    CHECK(plan.shared_bytes <= dev.shared_memory_per_block);
    if (!multiplies || !projects) CHECK(t.q_tiles == 0);
    if (!multiplies || !p.has_expand()) {
      CHECK(t.k_stage_rows == 0);
      CHECK(t.q_pair == 1);
    }
    if (!multiplies || !(projects || p.has_expand())) continue;  // (no step of the block on the unit)
    d::fused_block_plan on_unit, simt;
    const bool unit_fits = d::search_fused_block(d::make_shape(p), dev, sizeof(T), true, on_unit);
    const bool simt_fits = d::search_fused_block(d::make_shape(p), dev, sizeof(T), false, simt);
    CHECK((!unit_fits || on_unit.resident == d::fused_resident_blocks || on_unit.resident == 1));
    const bool unit_chosen = unit_fits && (!simt_fits || on_unit.resident > simt.resident ||
                                           (on_unit.resident == simt.resident && on_unit.traffic <= simt.traffic));
    CHECK((t.q_tiles > 0 || t.k_stage_rows > 0) == unit_chosen);
    CHECK(plan.traffic == (unit_chosen ? on_unit.traffic : simt.traffic));
    if (!unit_chosen) continue;
    // (K stages of 32 bytes, 8 floats: 16 channels of 16-bit types, 8 floats; the slice is
    // one or two of them)
    const int ks = 32 / static_cast<int>(sizeof(T)), slice_stages = d::fused_block_slice / ks;
    const int halo = t.in_rows * t.in_cols, k_stages = (p.c_in + ks - 1) / ks;
    if (p.has_expand()) {
      CHECK(t.k_stage_rows >= halo);
      CHECK(t.k_stage_rows % d::fused_mma_tile == 0);
      // (mma.sync at odd strides: 16, for step 3's strips; else 24, stores conflict-free)
      const bool sixteen = dev.matrix != matrix_unit::mfma && p.stride % 2 == 1;
      CHECK(t.slice_pitch == (sixteen ? 16 : 24));
      CHECK(t.q_pair == (p.stride % 2 == 1 && !sixteen ? 2 : 1));
      // (T input: 8 floats a row and K stage; mask and expanded slice: a row each)
      CHECK(d::fused_block_input + k_stages * t.k_stage_rows * 8 <= t.mask);
      CHECK(t.mask + t.k_stage_rows <= t.x);
      CHECK(t.x % 2 == 0);  // (8-byte stores of the sums)
      CHECK(t.x + t.k_stage_rows * t.slice_pitch <= t.wd);
      CHECK(t.we % 4 == 0);
      CHECK(t.we + k_stages * d::fused_block_slice * 8 <= t.floats);
    }
    if (!projects) continue;
    CHECK(t.q_tiles * d::fused_mma_tile >= t.rows * t.cols);
    CHECK(t.o_tiles * d::fused_mma_tile >= p.c_out);
    CHECK(t.q_tiles * t.o_tiles <= d::fused_mma_block_tiles);
    CHECK(t.scratch_warps >= 1);
    CHECK(t.scratch_warps <= static_cast<int>(d::fused_block_threads) / dev.warp_size);
    CHECK(d::fused_mma_scratch_at(t) + t.scratch_warps * d::fused_mma_scratch_largest <= t.floats);
    CHECK(t.d % 4 == 0);  // (16-byte aligned operand rows)
    CHECK(t.wp % 4 == 0);
    // (the slice's K stages of depthwise outputs and project weights, a gap apart)
    CHECK(t.d + (slice_stages * t.q_rows + (slice_stages - 1) * d::fused_stage_gap(t.q_pair)) * 8 <= t.wp);
    CHECK(t.wp + (slice_stages * t.o_tiles * d::fused_mma_tile + (slice_stages - 1) * d::fused_stage_gap(1)) * 8 <= t.floats);
  }
}

TEST_CASE("inverted_residual: the fused kernel expands and projects on the matrix unit wherever the unit multiplies the type", "[block]") {
#if defined(DSCONV_PLATFORM_HOST)
  const std::vector<dsconv::platform::device_properties> devices = dsconv::host::device_profiles();
#else
  const std::vector<dsconv::platform::device_properties> devices{current_device()};  // (the GPU this runs on)
#endif
  for (const dsconv::platform::device_properties& dev : devices) {
    for (const bool tf32 : {false, true}) check_matrix_unit_plans<float>(dev, tf32);
    check_matrix_unit_plans<dsconv::half>(dev, false);
    check_matrix_unit_plans<dsconv::bfloat16>(dev, false);
  }
}

// The fused kernel on a matrix unit stages its input and 1x1 weights in 16-byte runs exactly
// where the rows of those it stages (c_in, expanded) are whole runs of T and those tensors are
// 16-byte aligned (the odd shapes above run the element-by-element staging, the networks'
// blocks the runs).
TEST_CASE("inverted_residual: the fused kernel stages 16-byte runs only where they are whole and aligned", "[block]") {
  namespace d = dsconv::detail;
  alignas(16) static float buffer[64];
  const auto halves = reinterpret_cast<const dsconv::half*>(buffer);
  inverted_residual_params p = block(1, 16, 8, 8, 64, 3, 1, 0, 16, activation::relu6, true, layout::nhwc);
  const d::block_weight_ptrs<dsconv::half> w{halves, nullptr, halves, nullptr, halves, nullptr};
  CHECK(d::fused_vector_staging(p, w, halves));
  CHECK_FALSE(d::fused_vector_staging(p, w, halves + 1));
  d::block_weight_ptrs<dsconv::half> moved = w;
  moved.expand_weight = halves + 4;
  CHECK_FALSE(d::fused_vector_staging(p, moved, halves));
  moved = w, moved.project_weight = halves + 8;  // (16 bytes further: aligned)
  CHECK(d::fused_vector_staging(p, moved, halves));
  moved.project_weight = halves + 2;
  CHECK_FALSE(d::fused_vector_staging(p, moved, halves));
  p.c_in = 12;  // (not a whole run of 8 halves; of 4 floats it is)
  CHECK_FALSE(d::fused_vector_staging(p, w, halves));
  const d::block_weight_ptrs<float> f{buffer, nullptr, buffer, nullptr, buffer, nullptr};
  CHECK(d::fused_vector_staging(p, f, buffer));
  p.expanded = 66;
  CHECK_FALSE(d::fused_vector_staging(p, f, buffer));
  // (only what the kernel stages counts: with squeeze-excitation no project weights, without
  // an expand layer no input or expand weights)
  p.se_channels = 4;
  CHECK(d::fused_vector_staging(p, f, buffer));
  p.se_channels = 0, p.expanded = 64, p.c_in = 64;
  CHECK(d::fused_vector_staging(p, f, buffer + 1));
  p.c_in = 16;
  CHECK_FALSE(d::fused_vector_staging(p, f, buffer + 1));
}

TEST_CASE("inverted_residual: bad input returns its own status, launches nothing and writes nothing", "[block][validation]") {
  const inverted_residual_params good = block(1, 8, 6, 6, 16, 3, 1, 4, 8, activation::relu6, true, layout::nhwc);
  const block_tensors<float> t = random_block<float>(good);
  const device_block<float> d(t);
  const std::size_t bytes = dsconv::inverted_residual_workspace_size<float>(good);
  dsconv::device_buffer<char> workspace;
  REQUIRE(workspace.allocate(bytes) == status::success);
  guarded_output<float> out(output_count(good));

  auto expect = [&](status s, const inverted_residual_params& p, dsconv::inverted_residual_weights<float> w,
                    const float* input, float* output, dsconv::inverted_residual_options o) {
    const unsigned long long launches = launches_so_far();
    CHECK(dsconv::inverted_residual_forward(p, o, w, input, output) == s);
    CHECK(launches_so_far() == launches);
    CHECK(out.untouched());
  };
  dsconv::inverted_residual_options opts;
  opts.variant = block_variant::unfused, opts.workspace = workspace.data(), opts.workspace_bytes = bytes;
  auto with = [&](auto change) {
    inverted_residual_params p = good;
    change(p);
    return p;
  };
  // Every field of the params.
  expect(status::invalid_size, with([](auto& p) { p.n = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.c_in = -1; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.h = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.w = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.expanded = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.c_out = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_size, with([](auto& p) { p.se_channels = -2; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_kernel_size, with([](auto& p) { p.kernel = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_stride, with([](auto& p) { p.stride = 0; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_layout, with([](auto& p) { p.data_layout = static_cast<layout>(9); }), d.w, d.input, out.data(), opts);
  expect(status::invalid_activation, with([](auto& p) { p.act = static_cast<activation>(-1); }), d.w, d.input, out.data(), opts);
  expect(status::invalid_residual, with([](auto& p) { p.stride = 2; }), d.w, d.input, out.data(), opts);
  expect(status::invalid_residual, with([](auto& p) { p.c_out = 4; }), d.w, d.input, out.data(), opts);
  expect(status::size_overflow, with([](auto& p) { p.n = 1 << 30, p.h = p.w = 1 << 16; }), d.w, d.input, out.data(), opts);
  // Variants.
  dsconv::inverted_residual_options bad = opts;
  bad.variant = static_cast<block_variant>(7);
  expect(status::invalid_variant, good, d.w, d.input, out.data(), bad);
  bad.variant = block_variant::fused;
  expect(status::unsupported_variant, with([](auto& p) { p.data_layout = layout::nchw; }), d.w, d.input, out.data(), bad);
  CHECK(dsconv::can_implement<float>(block_variant::fused, with([](auto& p) {
          p.se_channels = 0, p.c_out = 513, p.residual = false;
        })) == status::unsupported_variant);
  // (with squeeze-excitation, a depthwise output of 2^31 elements an image: 16384^2 pixels of 8
  // channels; one element fewer fuses)
  const auto image_of = [&](int w) {
    return with([w](auto& p) { p.h = 16384, p.w = w, p.expanded = 8, p.residual = false, p.c_out = 8; });
  };
  REQUIRE(image_of(16384).se_channels > 0);
  CHECK(dsconv::can_implement<float>(block_variant::fused, image_of(16384)) == status::unsupported_variant);
  CHECK(dsconv::detail::fused_block_limits(image_of(16383)).empty());
  // Workspace.
  bad = opts, bad.workspace_bytes = bytes - 1;
  expect(status::insufficient_workspace, good, d.w, d.input, out.data(), bad);
  bad = opts, bad.workspace = nullptr;
  expect(status::insufficient_workspace, good, d.w, d.input, out.data(), bad);
  bad = opts, bad.variant = block_variant::automatic, bad.workspace = nullptr;  // squeeze-excitation: workspace either way
  expect(status::insufficient_workspace, good, d.w, d.input, out.data(), bad);
  bad = opts, bad.variant = block_variant::fused, bad.workspace = nullptr;
  expect(status::insufficient_workspace, good, d.w, d.input, out.data(), bad);
  // Null and overlapping buffers.
  expect(status::null_pointer, good, d.w, nullptr, out.data(), opts);
  expect(status::null_pointer, good, d.w, d.input, nullptr, opts);
  for (int i = 0; i < 4; ++i) {
    dsconv::inverted_residual_weights<float> w = d.w;
    (i == 0 ? w.expand_weight : i == 1 ? w.depthwise_weight : i == 2 ? w.se_reduce_weight : w.project_weight) = nullptr;
    INFO("weight " << i);
    expect(status::null_pointer, good, w, d.input, out.data(), opts);
  }
  expect(status::overlapping_buffers, good, d.w, d.input, const_cast<float*>(d.input), opts);
  bad = opts, bad.workspace = out.data();
  expect(status::overlapping_buffers, good, d.w, d.input, out.data(), bad);
  bad = opts, bad.workspace = const_cast<float*>(d.w.project_weight);
  expect(status::overlapping_buffers, good, d.w, d.input, out.data(), bad);
  dsconv::inverted_residual_weights<float> w = d.w;
  w.project_bias = out.data() + 3;
  expect(status::overlapping_buffers, good, w, d.input, out.data(), opts);
  // The weights of layers a block does not have are never read: null is fine there.
  inverted_residual_params plain = with([](auto& p) { p.se_channels = 0; });
  w = d.w, w.se_reduce_weight = w.se_expand_weight = nullptr;
  CHECK(dsconv::can_implement<float>(block_variant::unfused, plain) == status::success);
  std::vector<double> ref(output_count(plain));
  REQUIRE(dsconv::reference::inverted_residual_forward(plain, t.weights(), t.input.data(), ref.data()) == status::success);
  CHECK(dsconv::inverted_residual_forward(plain, opts, w, d.input, out.data()) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  check_close(out.download_checked(), ref, block_bound(plain, t));
}

TEST_CASE("fold_batch_norm: hand-computed values, in place, and its errors", "[block]") {
  // eps 1. Channel 0: s = 2 / sqrt(3 + 1) = 1, w' = w, b' = (0.5 - 1) + 4 = 3.5. Channel 1:
  // s = 6 / sqrt(8 + 1) = 2, w' = 2w, b' = 2 * (0 - -2) + 0 = 4. Without a bias: 3 and 4.
  std::vector<float> w = {1, 2, 3, 4}, b = {0.5f, 0};
  const float gamma[] = {2, 6}, beta[] = {4, 0}, mean[] = {1, -2}, var[] = {3, 8};
  REQUIRE(dsconv::fold_batch_norm(2, 2, w.data(), b.data(), gamma, beta, mean, var, 1.0f, w.data(), b.data()) ==
          status::success);
  CHECK(w == std::vector<float>{1, 2, 6, 8});
  CHECK(b == std::vector<float>{3.5f, 4});
  std::vector<float> fw(4), fb(2);
  CHECK(dsconv::fold_batch_norm(2, 2, w.data(), static_cast<const float*>(nullptr), gamma, beta, mean, var, 1.0f, fw.data(),
                                fb.data()) == status::success);
  CHECK(fb == std::vector<float>{3, 4});
  const float negative[] = {3, -1};
  fw.assign(4, -9.f);
  CHECK(dsconv::fold_batch_norm(2, 2, w.data(), b.data(), gamma, beta, mean, negative, 0.5f, fw.data(), fb.data()) ==
        status::invalid_batch_norm);
  CHECK(fw == std::vector<float>(4, -9.f));
  CHECK(dsconv::fold_batch_norm(0, 2, w.data(), b.data(), gamma, beta, mean, var, 1.0f, fw.data(), fb.data()) ==
        status::invalid_size);
  CHECK(dsconv::fold_batch_norm(2, 2, w.data(), b.data(), nullptr, beta, mean, var, 1.0f, fw.data(), fb.data()) ==
        status::null_pointer);
}
