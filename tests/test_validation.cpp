// Validation of both operations: every bad argument returns its own status, explains itself
// in last_error_detail(), launches nothing and writes nothing. Problems too large to allocate
// are passed with small real buffers: validation must reject them before touching memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::status;
using namespace dsconv_test;
using dw_params = dsconv::depthwise_params;
using pw_params = dsconv::pointwise_params;


// The valid problems every test breaks in one way (support/shapes.hpp), with an activation.
dw_params valid_depthwise() { return small_depthwise(dsconv::activation::relu); }
constexpr std::size_t dw_input = 120, dw_weight = 27, dw_bias = 3, dw_output = 120;

pw_params valid_pointwise() { return small_pointwise(dsconv::activation::relu); }
constexpr std::size_t pw_input = 36, pw_weight = 12, pw_bias = 4, pw_output = 48;

template <class T>
struct depthwise_buffers {
  device_input<T> input{random_tensor<T>(dw_input)}, weight{random_tensor<T>(dw_weight)},
      bias{random_tensor<T>(dw_bias)};
  guarded_output<T> output{dw_output};
};

template <class T>
struct pointwise_buffers {
  device_input<T> input{random_tensor<T>(pw_input)}, weight{random_tensor<T>(pw_weight)},
      bias{random_tensor<T>(pw_bias)}, residual{random_tensor<T>(pw_output)};
  guarded_output<T> output{pw_output};
};

// Both overloads of each operation on the valid buffers (the plain one uses automatic).
template <class T>
status run(const dw_params& p, depthwise_buffers<T>& b, const dsconv::depthwise_options* options = nullptr) {
  if (!options) return dsconv::depthwise_forward(p, b.input.data(), b.weight.data(), b.bias.data(), b.output.data());
  return dsconv::depthwise_forward(p, *options, b.input.data(), b.weight.data(), b.bias.data(), b.output.data());
}

template <class T>
status run(const pw_params& p, pointwise_buffers<T>& b, const dsconv::pointwise_options* options = nullptr) {
  if (!options)
    return dsconv::pointwise_forward(p, b.input.data(), b.weight.data(), b.bias.data(), b.residual.data(),
                                     b.output.data());
  return dsconv::pointwise_forward(p, *options, b.input.data(), b.weight.data(), b.bias.data(), b.residual.data(),
                                   b.output.data());
}

// Calls `call` (an entry point given one bad argument) and checks that it returns
// `expected`, names the problem in last_error_detail() (which contains `detail`), launches
// nothing and leaves `output` (with its guard zones) untouched.
template <class T, class Call>
void expect_rejected(status expected, const std::string& detail, guarded_output<T>& output, Call&& call) {
  const unsigned long long launches = launches_so_far();
  dsconv::platform::fail(status::success, "");  // so that the detail checked below is this call's
  CHECK(call() == expected);
  const std::string text = dsconv::last_error_detail();
  INFO("last_error_detail(): " << text);
  CHECK_FALSE(text.empty());
  CHECK(text.find(detail) != std::string::npos);
  CHECK(launches_so_far() == launches);
  CHECK(output.untouched());
}

// expect_rejected for a depthwise problem through both overloads and every variant, and
// (unless `check_can_implement` is false) can_implement's verdict on it.
template <class T>
void expect_depthwise_rejected(const dw_params& p, status expected, const std::string& detail,
                               bool check_can_implement = true) {
  INFO(describe(p));
  depthwise_buffers<T> b;
  expect_rejected(expected, detail, b.output, [&] { return run(p, b); });
  for (const dsconv::depthwise_variant v : variants_with_automatic(dsconv::all_depthwise_variants)) {
    INFO("variant " << dsconv::to_string(v));
    const dsconv::depthwise_options options{v};
    expect_rejected(expected, detail, b.output, [&] { return run(p, b, &options); });
    if (check_can_implement) CHECK(dsconv::can_implement<T>(v, p) == expected);
  }
}

template <class T>
void expect_pointwise_rejected(const pw_params& p, status expected, const std::string& detail,
                               bool check_can_implement = true) {
  INFO(describe(p));
  pointwise_buffers<T> b;
  expect_rejected(expected, detail, b.output, [&] { return run(p, b); });
  for (const dsconv::pointwise_variant v : variants_with_automatic(dsconv::all_pointwise_variants)) {
    INFO("variant " << dsconv::to_string(v));
    const dsconv::pointwise_options options{v};
    expect_rejected(expected, detail, b.output, [&] { return run(p, b, &options); });
    if (check_can_implement) CHECK(dsconv::can_implement<T>(v, p) == expected);
  }
}

// One more than the largest variant value: the smallest that names no variant.
template <class Variant, std::size_t N>
int past_last_variant(const Variant (&concrete)[N]) {
  int last = static_cast<int>(Variant::automatic);
  for (const Variant v : concrete) last = std::max(last, static_cast<int>(v));
  return last + 1;
}

struct bad_value {
  const char* name;
  int value;
  status expected;
};

// Tensors packed back to back in one device allocation, in a given order: adjacent, never
// overlapping, so the tightest legal placement can be tested.
template <class T>
class packed_tensors {
 public:
  explicit packed_tensors(const std::vector<const std::vector<T>*>& parts) {
    std::vector<T> all;
    for (const auto* part : parts) {
      offsets_.push_back(all.size());
      all.insert(all.end(), part->begin(), part->end());
    }
    sizes_ = parts;
    REQUIRE(buffer_.upload(all) == status::success);
  }
  T* part(std::size_t i) { return buffer_.data() + offsets_[i]; }
  // The contents of part i now.
  std::vector<T> download(std::size_t i) {
    std::vector<T> all;
    REQUIRE(buffer_.download(all) == status::success);
    const auto begin = all.begin() + static_cast<std::ptrdiff_t>(offsets_[i]);
    return std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(sizes_[i]->size()));
  }

 private:
  std::vector<std::size_t> offsets_;
  std::vector<const std::vector<T>*> sizes_;
  dsconv::device_buffer<T> buffer_;
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The last element slot of the address space: any range of two or more elements from there
// wraps around its end.
template <class T>
T* near_top_of_address_space() {
  return reinterpret_cast<T*>(~std::uintptr_t{0} - (sizeof(T) - 1));
}

// The operands of the valid pointwise problem as the automatic variant reads them: AMD's
// matrix cores (gfx90a) read 16-bit subnormals as zero.
template <class T>
std::vector<T> as_automatic_reads(const pw_params& p, const std::vector<T>& v) {
  dsconv::platform::device_properties dev;
  REQUIRE(dsconv::platform::get_device_properties(dev) == status::success);
  const dsconv::pointwise_variant chosen = dsconv::select_variant<T>(p);
  const bool matrix = chosen == dsconv::pointwise_variant::mma_large || chosen == dsconv::pointwise_variant::mma_small;
  return matrix && !std::is_same<T, float>::value && dev.matrix == dsconv::platform::matrix_unit::mfma ? flush_subnormals(v)
                                                                                                        : v;
}

}  // namespace

TEMPLATE_TEST_CASE("validation: the problems the other tests break are valid", "[validation]", float, dsconv::half,
                   dsconv::bfloat16) {
  // Every rejection below is caused by the one thing a test breaks, and launch_count() does
  // count launches.
  const unsigned long long launches = launches_so_far();
  depthwise_buffers<TestType> d;
  REQUIRE(run(valid_depthwise(), d) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  CHECK_FALSE(d.output.untouched());
  pointwise_buffers<TestType> p;
  REQUIRE(run(valid_pointwise(), p) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  CHECK_FALSE(p.output.untouched());
#if defined(DSCONV_PLATFORM_HOST)
  CHECK(launches_so_far() >= launches + 2);
#else
  (void)launches;
#endif
}

TEMPLATE_TEST_CASE("validation: depthwise rejects each invalid parameter with its own status", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const bad_value cases[] = {
      {"n", 0, status::invalid_size},
      {"n", -1, status::invalid_size},
      {"c", 0, status::invalid_size},
      {"c", -5, status::invalid_size},
      {"h", 0, status::invalid_size},
      {"h", INT_MIN, status::invalid_size},
      {"w", 0, status::invalid_size},
      {"w", -1, status::invalid_size},
      {"kernel_h", 0, status::invalid_kernel_size},
      {"kernel_h", -1, status::invalid_kernel_size},
      {"kernel_w", 0, status::invalid_kernel_size},
      {"kernel_w", INT_MIN, status::invalid_kernel_size},
      {"stride_h", 0, status::invalid_stride},
      {"stride_h", -1, status::invalid_stride},
      {"stride_w", 0, status::invalid_stride},
      {"stride_w", -2, status::invalid_stride},
      {"dilation_h", 0, status::invalid_dilation},
      {"dilation_h", -1, status::invalid_dilation},
      {"dilation_w", 0, status::invalid_dilation},
      {"dilation_w", INT_MIN, status::invalid_dilation},
      {"pad_h", -1, status::invalid_padding},
      {"pad_w", -1, status::invalid_padding},
      {"pad_w", INT_MIN, status::invalid_padding},
      {"multiplier", 0, status::invalid_multiplier},
      {"multiplier", -3, status::invalid_multiplier},
  };
  const std::pair<const char*, int dw_params::*> fields[] = {
      {"n", &dw_params::n},
      {"c", &dw_params::c},
      {"h", &dw_params::h},
      {"w", &dw_params::w},
      {"kernel_h", &dw_params::kernel_h},
      {"kernel_w", &dw_params::kernel_w},
      {"stride_h", &dw_params::stride_h},
      {"stride_w", &dw_params::stride_w},
      {"dilation_h", &dw_params::dilation_h},
      {"dilation_w", &dw_params::dilation_w},
      {"pad_h", &dw_params::pad_h},
      {"pad_w", &dw_params::pad_w},
      {"multiplier", &dw_params::multiplier},
  };
  for (const bad_value& c : cases) {
    dw_params p = valid_depthwise();
    for (const auto& f : fields)
      if (std::string(f.first) == c.name) p.*(f.second) = c.value;
    // The detail names the field and its value, e.g. "stride_w = -2".
    expect_depthwise_rejected<TestType>(p, c.expected, std::string(c.name) + " = " + std::to_string(c.value));
  }
}

TEMPLATE_TEST_CASE("validation: depthwise rejects a kernel larger than the padded input", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  dw_params p = valid_depthwise();
  SECTION("kernel_h 8 on 5 rows with pad 1") { p.kernel_h = 8; }
  SECTION("kernel_w 7 on 4 columns with pad 1") { p.kernel_w = 7; }
  SECTION("kernel 3 on a 1x1 map without padding") { p.h = p.w = 1, p.pad_h = p.pad_w = 0; }
  SECTION("dilation 4 spreads a 3x3 kernel over 9 rows") { p.dilation_h = 4; }
  SECTION("dilation_w INT_MAX") { p.dilation_w = INT_MAX; }
  SECTION("kernel_h INT_MAX") { p.kernel_h = INT_MAX; }
  expect_depthwise_rejected<TestType>(p, status::invalid_output_size, "output");
}

TEMPLATE_TEST_CASE("validation: depthwise rejects sizes that overflow, without touching memory", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  dw_params p = valid_depthwise();
  // Tensor element counts are can_implement's business too, but that has its own test below;
  // byte counts depend on the element type, which can_implement does not know.
  bool counts_only = false;
  SECTION("n = c = h = w = INT_MAX: element counts past 64 bits") {
    p.n = p.c = p.h = p.w = INT_MAX;
    p.kernel_h = p.kernel_w = 1, p.pad_h = p.pad_w = 0;
    counts_only = true;
  }
  SECTION("2^62 elements fit, their bytes do not") {
    p.n = p.c = 1 << 15, p.h = p.w = 1 << 16;
    p.kernel_h = p.kernel_w = 1, p.pad_h = p.pad_w = 0;
    counts_only = true;
  }
  SECTION("multiplier INT_MAX: output channels past int") { p.multiplier = INT_MAX; }
  SECTION("65536 channels x multiplier 32768 = 2^31 output channels") { p.c = 1 << 16, p.multiplier = 1 << 15; }
  SECTION("pad_h INT_MAX: out_h past int") { p.pad_h = INT_MAX; }
  SECTION("pad_w INT_MAX: out_w past int") { p.pad_w = INT_MAX; }
  SECTION("h INT_MAX with pad 2: out_h = INT_MAX + 2") { p.h = INT_MAX, p.pad_h = 2, p.c = 1, p.n = 1, p.w = 1; }
  SECTION("out_h fits an int but h + 2 * pad_h does not (kernel coordinates are int)") {
    p.h = INT_MAX - 10, p.pad_h = 100, p.stride_h = 4, p.c = 1, p.n = 1, p.w = 1;
  }
  expect_depthwise_rejected<TestType>(p, status::size_overflow, "", !counts_only);
}

TEMPLATE_TEST_CASE("validation: depthwise rejects unknown enum values", "[validation]", float, dsconv::half,
                   dsconv::bfloat16) {
  for (const int v : {2, -1, 100}) {
    dw_params p = valid_depthwise();
    p.data_layout = static_cast<dsconv::layout>(v);
    expect_depthwise_rejected<TestType>(p, status::invalid_layout, "layout value " + std::to_string(v));
  }
  for (const int v : {6, -1, 255}) {
    dw_params p = valid_depthwise();
    p.act = static_cast<dsconv::activation>(v);
    expect_depthwise_rejected<TestType>(p, status::invalid_activation, "activation value " + std::to_string(v));
  }
  for (const int v : {past_last_variant(dsconv::all_depthwise_variants), -1, 1000}) {
    const auto variant = static_cast<dsconv::depthwise_variant>(v);
    const dsconv::depthwise_options options{variant};
    depthwise_buffers<TestType> b;
    expect_rejected(status::invalid_variant, "variant value " + std::to_string(v), b.output,
                    [&] { return run(valid_depthwise(), b, &options); });
    CHECK(dsconv::can_implement(variant, valid_depthwise()) == status::invalid_variant);
  }
}

TEMPLATE_TEST_CASE("validation: depthwise null pointers", "[validation]", float, dsconv::half, dsconv::bfloat16) {
  const dw_params p = valid_depthwise();
  depthwise_buffers<TestType> b;
  SECTION("null input, weight or output is rejected") {
    expect_rejected(status::null_pointer, "input is null", b.output, [&] {
      return dsconv::depthwise_forward<TestType>(p, nullptr, b.weight.data(), b.bias.data(), b.output.data());
    });
    expect_rejected(status::null_pointer, "weight is null", b.output, [&] {
      return dsconv::depthwise_forward<TestType>(p, b.input.data(), nullptr, b.bias.data(), b.output.data());
    });
    expect_rejected(status::null_pointer, "output is null", b.output, [&] {
      return dsconv::depthwise_forward<TestType>(p, b.input.data(), b.weight.data(), b.bias.data(), nullptr);
    });
  }
  SECTION("null bias is allowed and means no bias") {
    const std::vector<TestType> input = random_tensor<TestType>(dw_input), weight = random_tensor<TestType>(dw_weight);
    const device_input<TestType> d_input(input), d_weight(weight);
    std::vector<double> ref(dw_output);
    REQUIRE(dsconv::reference::depthwise_forward(p, input.data(), weight.data(), static_cast<const TestType*>(nullptr),
                                                 ref.data()) == status::success);
    REQUIRE(dsconv::depthwise_forward<TestType>(p, d_input.data(), d_weight.data(), nullptr, b.output.data()) ==
            status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    check_close(b.output.download_checked(), ref, depthwise_bound(p, input, weight, static_cast<const TestType*>(nullptr)));
  }
}

TEMPLATE_TEST_CASE("validation: depthwise rejects an output that overlaps an input", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const dw_params p = valid_depthwise();
  depthwise_buffers<TestType> b;
  // One poisoned allocation holds the overlapping tensors: untouched() covers all of them.
  guarded_output<TestType> arena(512);
  TestType* a = arena.data();
  const TestType* input = b.input.data();
  const TestType* weight = b.weight.data();
  const TestType* bias = b.bias.data();
  TestType* output = a;
  std::string overlapped;
  SECTION("output is the input") { input = a, overlapped = "input"; }
  SECTION("output starts on the input's last element") { input = a, output = a + dw_input - 1, overlapped = "input"; }
  SECTION("input starts on the output's last element") { input = a + dw_output - 1, overlapped = "input"; }
  SECTION("input starts one element into the output") { input = a + 1, overlapped = "input"; }
  SECTION("output is the weight") { weight = a, overlapped = "weight"; }
  SECTION("weight lies inside the output") { weight = a + 50, overlapped = "weight"; }
  SECTION("output starts on the weight's last element") {
    weight = a, output = a + dw_weight - 1, overlapped = "weight";
  }
  SECTION("weight starts on the output's last element") { weight = a + dw_output - 1, overlapped = "weight"; }
  SECTION("output is the bias") { bias = a, overlapped = "bias"; }
  SECTION("output starts on the bias's last element") { bias = a, output = a + dw_bias - 1, overlapped = "bias"; }
  SECTION("bias starts on the output's last element") { bias = a + dw_output - 1, overlapped = "bias"; }
  const unsigned long long launches = launches_so_far();
  CHECK(dsconv::depthwise_forward(p, input, weight, bias, output) == status::overlapping_buffers);
  CHECK(std::string(dsconv::last_error_detail()).find("output overlaps " + overlapped) != std::string::npos);
  CHECK(launches_so_far() == launches);
  CHECK(arena.untouched());
  CHECK(b.output.untouched());
}

TEMPLATE_TEST_CASE("validation: depthwise accepts an output adjacent to its inputs", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const dw_params p = valid_depthwise();
  const std::vector<TestType> input = random_tensor<TestType>(dw_input), weight = random_tensor<TestType>(dw_weight),
                              bias = random_tensor<TestType>(dw_bias);
  const std::vector<TestType> poisoned(dw_output, poison_value<TestType>());
  std::vector<double> ref(dw_output);
  REQUIRE(dsconv::reference::depthwise_forward(p, input.data(), weight.data(), bias.data(), ref.data()) ==
          status::success);
  // Memory orders that put the output right after and right before each input.
  const std::vector<const std::vector<TestType>*> tensors = {&input, &weight, &bias, &poisoned};
  enum { in, wt, bs, out };
  const std::vector<int> order = GENERATE(std::vector<int>{in, out, wt, bs}, std::vector<int>{wt, out, in, bs},
                                          std::vector<int>{bs, out, in, wt}, std::vector<int>{in, wt, out, bs});
  std::vector<const std::vector<TestType>*> parts;
  for (int t : order) parts.push_back(tensors[t]);
  const auto index = [&](int t) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), t) - order.begin());
  };
  INFO("memory order (input 0, weight 1, bias 2, output 3): " << order[0] << order[1] << order[2] << order[3]);
  packed_tensors<TestType> packed(parts);
  REQUIRE(dsconv::depthwise_forward(p, packed.part(index(in)), packed.part(index(wt)), packed.part(index(bs)),
                                    packed.part(index(out))) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  check_close(packed.download(index(out)), ref, depthwise_bound(p, input, weight, bias.data()));
  CHECK(same_bits(packed.download(index(in)), input));
  CHECK(same_bits(packed.download(index(wt)), weight));
  CHECK(same_bits(packed.download(index(bs)), bias));
}

TEMPLATE_TEST_CASE("validation: depthwise rejects buffer ranges that wrap the address space", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const dw_params p = valid_depthwise();
  depthwise_buffers<TestType> b;
  const TestType* top = near_top_of_address_space<TestType>();
  expect_rejected(status::size_overflow, "output range wraps", b.output, [&] {
    return dsconv::depthwise_forward(p, b.input.data(), b.weight.data(), b.bias.data(),
                                     near_top_of_address_space<TestType>());
  });
  expect_rejected(status::size_overflow, "input range wraps", b.output,
                  [&] { return dsconv::depthwise_forward(p, top, b.weight.data(), b.bias.data(), b.output.data()); });
  expect_rejected(status::size_overflow, "weight range wraps", b.output,
                  [&] { return dsconv::depthwise_forward(p, b.input.data(), top, b.bias.data(), b.output.data()); });
}

TEMPLATE_TEST_CASE("validation: pointwise rejects each invalid size with invalid_size", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const std::pair<const char*, int pw_params::*> fields[] = {
      {"n", &pw_params::n}, {"c_in", &pw_params::c_in}, {"c_out", &pw_params::c_out},
      {"h", &pw_params::h}, {"w", &pw_params::w},
  };
  for (const auto& f : fields)
    for (const int v : {0, -1, INT_MIN}) {
      pw_params p = valid_pointwise();
      p.*(f.second) = v;
      expect_pointwise_rejected<TestType>(p, status::invalid_size, std::string(f.first) + " = " + std::to_string(v));
    }
}

TEMPLATE_TEST_CASE("validation: pointwise rejects sizes that overflow, without touching memory", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  pw_params p = valid_pointwise();
  SECTION("every extent INT_MAX") { p.n = p.c_in = p.c_out = p.h = p.w = INT_MAX; }
  SECTION("2^62 input elements fit, their bytes do not") { p.n = p.c_in = 1 << 15, p.h = p.w = 1 << 16, p.c_out = 1; }
  SECTION("c_out INT_MAX on a 65536x65536 map") { p.c_in = 1, p.c_out = INT_MAX, p.h = p.w = 1 << 16, p.n = 1; }
  // can_implement's verdict on element counts has its own test below.
  expect_pointwise_rejected<TestType>(p, status::size_overflow, "", false);
}

TEMPLATE_TEST_CASE("validation: pointwise rejects unknown enum values", "[validation]", float, dsconv::half,
                   dsconv::bfloat16) {
  for (const int v : {2, -1, 100}) {
    pw_params p = valid_pointwise();
    p.data_layout = static_cast<dsconv::layout>(v);
    expect_pointwise_rejected<TestType>(p, status::invalid_layout, "layout value " + std::to_string(v));
  }
  for (const int v : {6, -1, 255}) {
    pw_params p = valid_pointwise();
    p.act = static_cast<dsconv::activation>(v);
    expect_pointwise_rejected<TestType>(p, status::invalid_activation, "activation value " + std::to_string(v));
  }
  for (const int v : {past_last_variant(dsconv::all_pointwise_variants), -1, 1000}) {
    const auto variant = static_cast<dsconv::pointwise_variant>(v);
    const dsconv::pointwise_options options{variant};
    pointwise_buffers<TestType> b;
    expect_rejected(status::invalid_variant, "variant value " + std::to_string(v), b.output,
                    [&] { return run(valid_pointwise(), b, &options); });
    CHECK(dsconv::can_implement(variant, valid_pointwise()) == status::invalid_variant);
  }
}

TEMPLATE_TEST_CASE("validation: pointwise null pointers", "[validation]", float, dsconv::half, dsconv::bfloat16) {
  const pw_params p = valid_pointwise();
  pointwise_buffers<TestType> b;
  SECTION("null input, weight or output is rejected") {
    expect_rejected(status::null_pointer, "input is null", b.output, [&] {
      return dsconv::pointwise_forward<TestType>(p, nullptr, b.weight.data(), b.bias.data(), b.residual.data(),
                                                 b.output.data());
    });
    expect_rejected(status::null_pointer, "weight is null", b.output, [&] {
      return dsconv::pointwise_forward<TestType>(p, b.input.data(), nullptr, b.bias.data(), b.residual.data(),
                                                 b.output.data());
    });
    expect_rejected(status::null_pointer, "output is null", b.output, [&] {
      return dsconv::pointwise_forward<TestType>(p, b.input.data(), b.weight.data(), b.bias.data(), b.residual.data(),
                                                 nullptr);
    });
  }
  SECTION("null bias and null residual are allowed") {
    const bool with_bias = GENERATE(false, true);
    const bool with_residual = GENERATE(false, true);
    INFO((with_bias ? "bias" : "no bias") << ", " << (with_residual ? "residual" : "no residual"));
    const std::vector<TestType> input = random_tensor<TestType>(pw_input), weight = random_tensor<TestType>(pw_weight),
                                bias = random_tensor<TestType>(pw_bias), residual = random_tensor<TestType>(pw_output);
    const device_input<TestType> d_input(input), d_weight(weight), d_bias(bias), d_residual(residual);
    std::vector<double> ref(pw_output);
    REQUIRE(dsconv::reference::pointwise_forward(p, as_automatic_reads(p, input).data(), as_automatic_reads(p, weight).data(),
                                                 with_bias ? bias.data() : nullptr,
                                                 with_residual ? residual.data() : nullptr,
                                                 ref.data()) == status::success);
    REQUIRE(dsconv::pointwise_forward<TestType>(p, d_input.data(), d_weight.data(), with_bias ? d_bias.data() : nullptr,
                                                with_residual ? d_residual.data() : nullptr,
                                                b.output.data()) == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    check_close(b.output.download_checked(), ref,
                pointwise_bound(p, input, weight, with_bias ? bias.data() : nullptr, with_residual ? &residual : nullptr));
  }
}

TEMPLATE_TEST_CASE("validation: pointwise rejects an output that overlaps an input", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const pw_params p = valid_pointwise();
  pointwise_buffers<TestType> b;
  guarded_output<TestType> arena(512);
  TestType* a = arena.data();
  const TestType* input = b.input.data();
  const TestType* weight = b.weight.data();
  const TestType* bias = b.bias.data();
  const TestType* residual = b.residual.data();
  TestType* output = a;
  std::string overlapped;
  SECTION("output is the input") { input = a, overlapped = "input"; }
  SECTION("output starts on the input's last element") { input = a, output = a + pw_input - 1, overlapped = "input"; }
  SECTION("input starts on the output's last element") { input = a + pw_output - 1, overlapped = "input"; }
  SECTION("output is the weight") { weight = a, overlapped = "weight"; }
  SECTION("weight starts on the output's last element") { weight = a + pw_output - 1, overlapped = "weight"; }
  SECTION("output is the bias") { bias = a, overlapped = "bias"; }
  SECTION("bias lies inside the output") { bias = a + 10, overlapped = "bias"; }
  SECTION("output starts on the bias's last element") { bias = a, output = a + pw_bias - 1, overlapped = "bias"; }
  SECTION("output is the residual (in-place residual add)") { residual = a, overlapped = "residual"; }
  SECTION("output starts on the residual's last element") {
    residual = a, output = a + pw_output - 1, overlapped = "residual";
  }
  SECTION("residual starts on the output's last element") { residual = a + pw_output - 1, overlapped = "residual"; }
  SECTION("residual shifted by one element") { residual = a + 1, overlapped = "residual"; }
  const unsigned long long launches = launches_so_far();
  CHECK(dsconv::pointwise_forward(p, input, weight, bias, residual, output) == status::overlapping_buffers);
  CHECK(std::string(dsconv::last_error_detail()).find("output overlaps " + overlapped) != std::string::npos);
  CHECK(launches_so_far() == launches);
  CHECK(arena.untouched());
  CHECK(b.output.untouched());
}

TEMPLATE_TEST_CASE("validation: pointwise accepts an output adjacent to its inputs", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const pw_params p = valid_pointwise();
  const std::vector<TestType> input = random_tensor<TestType>(pw_input), weight = random_tensor<TestType>(pw_weight),
                              bias = random_tensor<TestType>(pw_bias), residual = random_tensor<TestType>(pw_output);
  const std::vector<TestType> poisoned(pw_output, poison_value<TestType>());
  std::vector<double> ref(pw_output);
  REQUIRE(dsconv::reference::pointwise_forward(p, as_automatic_reads(p, input).data(), as_automatic_reads(p, weight).data(),
                                               bias.data(), residual.data(),
                                               ref.data()) == status::success);
  const std::vector<const std::vector<TestType>*> tensors = {&input, &weight, &bias, &residual, &poisoned};
  enum { in, wt, bs, res, out };
  // Memory orders that put the output right after and right before each input.
  const std::vector<int> order =
      GENERATE(std::vector<int>{res, out, in, wt, bs}, std::vector<int>{in, wt, bs, out, res},
               std::vector<int>{wt, out, bs, res, in}, std::vector<int>{bs, res, in, out, wt});
  std::vector<const std::vector<TestType>*> parts;
  for (int t : order) parts.push_back(tensors[t]);
  const auto index = [&](int t) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), t) - order.begin());
  };
  INFO("memory order (input 0, weight 1, bias 2, residual 3, output 4): " << order[0] << order[1] << order[2]
                                                                          << order[3] << order[4]);
  packed_tensors<TestType> packed(parts);
  REQUIRE(dsconv::pointwise_forward(p, packed.part(index(in)), packed.part(index(wt)), packed.part(index(bs)),
                                    packed.part(index(res)), packed.part(index(out))) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  check_close(packed.download(index(out)), ref, pointwise_bound(p, input, weight, bias.data(), &residual));
  CHECK(same_bits(packed.download(index(in)), input));
  CHECK(same_bits(packed.download(index(wt)), weight));
  CHECK(same_bits(packed.download(index(bs)), bias));
  CHECK(same_bits(packed.download(index(res)), residual));
}

TEMPLATE_TEST_CASE("validation: pointwise rejects buffer ranges that wrap the address space", "[validation]", float,
                   dsconv::half, dsconv::bfloat16) {
  const pw_params p = valid_pointwise();
  pointwise_buffers<TestType> b;
  const TestType* top = near_top_of_address_space<TestType>();
  expect_rejected(status::size_overflow, "output range wraps", b.output, [&] {
    return dsconv::pointwise_forward(p, b.input.data(), b.weight.data(), b.bias.data(), b.residual.data(),
                                     near_top_of_address_space<TestType>());
  });
  expect_rejected(status::size_overflow, "residual range wraps", b.output, [&] {
    return dsconv::pointwise_forward(p, b.input.data(), b.weight.data(), b.bias.data(), top, b.output.data());
  });
}

TEMPLATE_TEST_CASE("validation: a pre_activation or activation_derivative tensor that overlaps another of the call",
                   "[validation]", float, dsconv::half, dsconv::bfloat16) {
  // The forward's optional second output (the activation's input or its derivative there, for
  // the backward pass) is written like the output: it may overlap nothing; and it is one of the
  // two, not both.
  guarded_output<TestType> arena(512);
  TestType* a = arena.data();
  depthwise_buffers<TestType> d;
  pointwise_buffers<TestType> w;
  struct placement {
    const char* what;
    TestType* pre;
    bool output_in_arena, input_in_arena;
    const char* overlapped;
  };
  const placement cases[] = {
      {"the saved tensor is the output", nullptr, true, false, "output"},
      {"the saved tensor starts one element into the input", a + 1, false, true, "input"},
  };
  for (const bool derivative : {false, true})
    for (const placement& c : cases) {
      const std::string name = derivative ? "activation_derivative" : "pre_activation";
      INFO(c.what << ": " << name);
      const unsigned long long launches = launches_so_far();
      dsconv::depthwise_options dopt;
      (derivative ? dopt.activation_derivative : dopt.pre_activation) = c.pre ? c.pre : a;
      CHECK(dsconv::depthwise_forward(valid_depthwise(), dopt, c.input_in_arena ? a : d.input.data(), d.weight.data(),
                                      d.bias.data(), c.output_in_arena ? a : d.output.data()) ==
            status::overlapping_buffers);
      CHECK(std::string(dsconv::last_error_detail()).find(name + " overlaps " + c.overlapped) != std::string::npos);
      dsconv::pointwise_options popt;
      (derivative ? popt.activation_derivative : popt.pre_activation) = c.pre ? c.pre : a;
      CHECK(dsconv::pointwise_forward(valid_pointwise(), popt, c.input_in_arena ? a : w.input.data(), w.weight.data(),
                                      w.bias.data(), w.residual.data(), c.output_in_arena ? a : w.output.data()) ==
            status::overlapping_buffers);
      CHECK(std::string(dsconv::last_error_detail()).find(name + " overlaps " + c.overlapped) != std::string::npos);
      CHECK(launches_so_far() == launches);
      CHECK(arena.untouched());
      CHECK(d.output.untouched());
      CHECK(w.output.untouched());
    }
  // Both: the call refuses (conflicting_activation_tensors) and writes neither.
  guarded_output<TestType> pre(512), derivative(512);
  const unsigned long long launches = launches_so_far();
  dsconv::depthwise_options dopt;
  dopt.pre_activation = pre.data(), dopt.activation_derivative = derivative.data();
  CHECK(dsconv::depthwise_forward(valid_depthwise(), dopt, d.input.data(), d.weight.data(), d.bias.data(),
                                  d.output.data()) == status::conflicting_activation_tensors);
  dsconv::pointwise_options popt;
  popt.pre_activation = pre.data(), popt.activation_derivative = derivative.data();
  CHECK(dsconv::pointwise_forward(valid_pointwise(), popt, w.input.data(), w.weight.data(), w.bias.data(),
                                  w.residual.data(), w.output.data()) == status::conflicting_activation_tensors);
  CHECK(launches_so_far() == launches);
  CHECK(pre.untouched());
  CHECK(derivative.untouched());
  CHECK(d.output.untouched());
  CHECK(w.output.untouched());
}

TEST_CASE("validation: can_implement rejects problems whose element counts overflow 64 bits", "[validation]") {
  // No variant can run a tensor of more than 2^63 elements, whatever its element type.
  dw_params dw = valid_depthwise();
  dw.n = dw.c = dw.h = dw.w = INT_MAX;
  dw.kernel_h = dw.kernel_w = 1, dw.pad_h = dw.pad_w = 0;
  pw_params all_int_max = valid_pointwise();
  all_int_max.n = all_int_max.c_in = all_int_max.c_out = all_int_max.h = all_int_max.w = INT_MAX;
  pw_params wide_output = valid_pointwise();  // output elements 2^16 * 2^16 * (2^31 - 1)
  wide_output.n = 1, wide_output.c_in = 1, wide_output.c_out = INT_MAX, wide_output.h = wide_output.w = 1 << 16;
  for (const dsconv::depthwise_variant v : variants_with_automatic(dsconv::all_depthwise_variants)) {
    INFO("depthwise variant " << dsconv::to_string(v) << ", " << describe(dw));
    CHECK(dsconv::can_implement(v, dw) == status::size_overflow);
  }
  for (const dsconv::pointwise_variant v : variants_with_automatic(dsconv::all_pointwise_variants)) {
    for (const pw_params& p : {all_int_max, wide_output}) {
      INFO("pointwise variant " << dsconv::to_string(v) << ", " << describe(p));
      CHECK(dsconv::can_implement(v, p) == status::size_overflow);
    }
  }
}

TEST_CASE("validation: to_string names every status distinctly", "[validation]") {
  const status all[] = {
      status::success,          status::invalid_size,          status::invalid_kernel_size, status::invalid_stride,
      status::invalid_dilation, status::invalid_padding,       status::invalid_multiplier,  status::invalid_output_size,
      status::invalid_layout,   status::invalid_activation,    status::invalid_variant,     status::unsupported_variant,
      status::null_pointer,     status::overlapping_buffers,   status::size_overflow,       status::insufficient_workspace,
      status::missing_activation_tensor, status::conflicting_activation_tensors, status::invalid_residual, status::invalid_batch_norm, status::no_device,
      status::out_of_memory,    status::invalid_launch_config, status::launch_failed,       status::barrier_divergence,
      status::kernel_fault,     status::platform_error};
  const char* unknown = dsconv::to_string(static_cast<status>(1000));
  REQUIRE(unknown != nullptr);
  REQUIRE(dsconv::to_string(static_cast<status>(-1)) != nullptr);
  std::set<std::string> names{unknown};
  for (const status s : all) {
    INFO("status " << static_cast<int>(s));
    const char* name = dsconv::to_string(s);
    REQUIRE(name != nullptr);
    CHECK(std::string(name).size() > 0);
    CHECK(names.insert(name).second);  // distinct from every other, and from the out-of-range text
  }
  // The other enums' names are never null either.
  CHECK(dsconv::to_string(static_cast<dsconv::layout>(7)) != nullptr);
  CHECK(dsconv::to_string(static_cast<dsconv::activation>(7)) != nullptr);
  CHECK(dsconv::to_string(static_cast<dsconv::depthwise_variant>(7)) != nullptr);
  CHECK(dsconv::to_string(static_cast<dsconv::pointwise_variant>(7)) != nullptr);
}
