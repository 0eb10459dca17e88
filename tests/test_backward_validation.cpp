// Validation of the four backward calls: every bad argument returns its own status, explains
// itself in last_error_detail(), launches nothing and writes nothing (neither gradient, nor the
// bias gradient, nor the workspace), through the plain call, the options call with every
// variant, and can_implement_backward_*.
#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::status;
using namespace dsconv_test;
using dw_params = dsconv::depthwise_params;
using pw_params = dsconv::pointwise_params;

// The valid problems every test breaks in one way (support/shapes.hpp), without an activation.
dw_params valid_depthwise() { return small_depthwise(dsconv::activation::none); }
pw_params valid_pointwise() { return small_pointwise(dsconv::activation::none); }

// Element counts of the valid problems' tensors (the buffers of every test, whatever it broke).
struct counts {
  std::size_t input, output, weight, bias;
};
counts counts_of(const dw_params&) { return {120, 120, 27, 3}; }
counts counts_of(const pw_params&) { return {36, 48, 12, 4}; }

enum class pass { data, weight };
const char* op_name(const dw_params&, pass ps) {
  return ps == pass::data ? "depthwise backward data" : "depthwise backward weight";
}
const char* op_name(const pw_params&, pass ps) {
  return ps == pass::data ? "pointwise backward data" : "pointwise backward weight";
}

// What a backward call reads and writes. data: first = grad_output, second = weight, grad =
// grad_input; weight: first = input, second = grad_output, grad = grad_weight.
template <class T>
struct call_args {
  const T* first;
  const T* second;
  T* grad;
  T* grad_bias;
  const void* saved = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// The call through its options overload with `variant` (or, with `plain`, the plain overload).
template <class T>
status invoke(const dw_params& p, pass ps, const call_args<T>& a, dsconv::depthwise_variant variant, bool plain) {
  if (plain)
    return ps == pass::data ? dsconv::depthwise_backward_data(p, a.first, a.second, a.grad)
                            : dsconv::depthwise_backward_weight(p, a.first, a.second, a.grad, a.grad_bias);
  dsconv::depthwise_backward_options o;
  o.variant = variant, o.activation_saved = a.saved, o.workspace = a.workspace, o.workspace_bytes = a.workspace_bytes;
  return ps == pass::data ? dsconv::depthwise_backward_data(p, o, a.first, a.second, a.grad)
                          : dsconv::depthwise_backward_weight(p, o, a.first, a.second, a.grad, a.grad_bias);
}
template <class T>
status invoke(const pw_params& p, pass ps, const call_args<T>& a, dsconv::pointwise_variant variant, bool plain) {
  if (plain)
    return ps == pass::data ? dsconv::pointwise_backward_data(p, a.first, a.second, a.grad)
                            : dsconv::pointwise_backward_weight(p, a.first, a.second, a.grad, a.grad_bias);
  dsconv::pointwise_backward_options o;
  o.variant = variant, o.activation_saved = a.saved, o.workspace = a.workspace, o.workspace_bytes = a.workspace_bytes;
  return ps == pass::data ? dsconv::pointwise_backward_data(p, o, a.first, a.second, a.grad)
                          : dsconv::pointwise_backward_weight(p, o, a.first, a.second, a.grad, a.grad_bias);
}

template <class T>
status can_implement(dsconv::depthwise_variant v, const dw_params& p, pass ps) {
  return ps == pass::data ? dsconv::can_implement_backward_data<T>(v, p) : dsconv::can_implement_backward_weight<T>(v, p);
}
template <class T>
status can_implement(dsconv::pointwise_variant v, const pw_params& p, pass ps) {
  return ps == pass::data ? dsconv::can_implement_backward_data<T>(v, p) : dsconv::can_implement_backward_weight<T>(v, p);
}

const auto& all_variants(const dw_params&) { return dsconv::all_depthwise_variants; }
const auto& all_variants(const pw_params&) { return dsconv::all_pointwise_variants; }

// Real buffers of the valid problem: the two read tensors, the saved activation tensor, and
// poisoned, guarded gradients and workspace whose every byte must stay as it is on a refusal.
template <class T>
struct backward_buffers {
  device_input<T> first, second, saved;
  guarded_output<T> grad, grad_bias;
  static constexpr std::size_t workspace_floats = 16384;
  guarded_output<float> workspace{workspace_floats};

  backward_buffers(const counts& c, pass ps)
      : first(random_tensor<T>(ps == pass::data ? c.output : c.input)),
        second(random_tensor<T>(ps == pass::data ? c.weight : c.output)),
        saved(random_tensor<T>(c.output)),
        grad(ps == pass::data ? c.input : c.weight),
        grad_bias(c.bias) {}

  call_args<T> args() {
    return {first.data(), second.data(), grad.data(), grad_bias.data(), saved.data(), workspace.data(),
            workspace_floats * sizeof(float)};
  }
  bool untouched() { return grad.untouched() && grad_bias.untouched() && workspace.untouched(); }
};

// Checks that `call` returns `expected`, names the problem (the detail contains `detail`),
// launches nothing and writes nothing.
template <class T, class Call>
void expect_refused(status expected, const std::string& detail, backward_buffers<T>& b, Call&& call) {
  const unsigned long long launches = launches_so_far();
  dsconv::platform::fail(status::success, "");  // so that the detail checked below is this call's
  CHECK(call() == expected);
  const std::string text = dsconv::last_error_detail();
  INFO("last_error_detail(): " << text);
  CHECK(text.find(detail) != std::string::npos);
  CHECK(launches_so_far() == launches);
  CHECK(b.untouched());
}

// expect_refused for both passes of `p` through the plain call (where `plain` allows it: the
// problem has no activation) and the options call with automatic and every variant, and
// can_implement_backward_*'s verdict (unless `check_can_implement` is false).
template <class T, class Params>
void expect_backward_rejected(const Params& p, status expected, const std::string& detail,
                              bool check_can_implement = true) {
  INFO(describe(p));
  for (const pass ps : {pass::data, pass::weight}) {
    INFO(op_name(p, ps));
    backward_buffers<T> b(counts_of(p), ps);
    const call_args<T> a = b.args();
    using variant_t = typename std::decay<decltype(all_variants(p)[0])>::type;
    if (p.act == dsconv::activation::none)
      expect_refused(expected, detail, b, [&] { return invoke(p, ps, a, variant_t::automatic, true); });
    for (const variant_t v : variants_with_automatic(all_variants(p))) {
      INFO("variant " << dsconv::to_string(v));
      expect_refused(expected, detail, b, [&] { return invoke(p, ps, a, v, false); });
      if (check_can_implement) CHECK(can_implement<T>(v, p, ps) == expected);
    }
  }
}

// The last element slot of the address space: any range of two or more elements from there
// wraps around its end.
template <class T>
T* near_top_of_address_space() {
  return reinterpret_cast<T*>(~std::uintptr_t{0} - (sizeof(T) - 1));
}

}  // namespace

TEMPLATE_TEST_CASE("backward validation: the problems the other tests break are valid", "[validation][backward]", float,
                   dsconv::half, dsconv::bfloat16) {
  for (const pass ps : {pass::data, pass::weight}) {
    INFO((ps == pass::data ? "data" : "weight"));
    backward_buffers<TestType> d(counts_of(valid_depthwise()), ps);
    REQUIRE(invoke(valid_depthwise(), ps, d.args(), dsconv::depthwise_variant::automatic, true) == status::success);
    backward_buffers<TestType> w(counts_of(valid_pointwise()), ps);
    REQUIRE(invoke(valid_pointwise(), ps, w.args(), dsconv::pointwise_variant::automatic, true) == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    CHECK_FALSE(d.grad.untouched());
    CHECK_FALSE(w.grad.untouched());
  }
}

TEMPLATE_TEST_CASE("backward validation: each invalid parameter is rejected with its own status",
                   "[validation][backward]", float, dsconv::half, dsconv::bfloat16) {
  struct dw_case {
    const char* what;
    std::function<void(dw_params&)> change;
    status expected;
    const char* detail;
  };
  const dw_case dw_cases[] = {
      {"n = 0", [](dw_params& p) { p.n = 0; }, status::invalid_size, "n = 0"},
      {"c = -5", [](dw_params& p) { p.c = -5; }, status::invalid_size, "c = -5"},
      {"kernel_w = 0", [](dw_params& p) { p.kernel_w = 0; }, status::invalid_kernel_size, "kernel_w = 0"},
      {"stride_h = -1", [](dw_params& p) { p.stride_h = -1; }, status::invalid_stride, "stride_h = -1"},
      {"dilation_w = 0", [](dw_params& p) { p.dilation_w = 0; }, status::invalid_dilation, "dilation_w = 0"},
      {"pad_h = -1", [](dw_params& p) { p.pad_h = -1; }, status::invalid_padding, "pad_h = -1"},
      {"multiplier = 0", [](dw_params& p) { p.multiplier = 0; }, status::invalid_multiplier, "multiplier = 0"},
      {"kernel 8 on 5 rows", [](dw_params& p) { p.kernel_h = 8; }, status::invalid_output_size, "output"},
      {"layout 2", [](dw_params& p) { p.data_layout = static_cast<dsconv::layout>(2); }, status::invalid_layout,
       "layout value 2"},
      {"activation 6", [](dw_params& p) { p.act = static_cast<dsconv::activation>(6); }, status::invalid_activation,
       "activation value 6"},
      {"multiplier INT_MAX", [](dw_params& p) { p.multiplier = INT_MAX; }, status::size_overflow, ""},
      {"pad_w INT_MAX", [](dw_params& p) { p.pad_w = INT_MAX; }, status::size_overflow, ""},
  };
  for (const dw_case& c : dw_cases) {
    INFO(c.what);
    dw_params p = valid_depthwise();
    c.change(p);
    expect_backward_rejected<TestType>(p, c.expected, c.detail);
  }
  struct pw_case {
    const char* what;
    std::function<void(pw_params&)> change;
    status expected;
    const char* detail;
  };
  const pw_case pw_cases[] = {
      {"c_in = 0", [](pw_params& p) { p.c_in = 0; }, status::invalid_size, "c_in = 0"},
      {"c_out = INT_MIN", [](pw_params& p) { p.c_out = INT_MIN; }, status::invalid_size, "c_out ="},
      {"w = -1", [](pw_params& p) { p.w = -1; }, status::invalid_size, "w = -1"},
      {"layout -1", [](pw_params& p) { p.data_layout = static_cast<dsconv::layout>(-1); }, status::invalid_layout,
       "layout value -1"},
      {"activation 255", [](pw_params& p) { p.act = static_cast<dsconv::activation>(255); }, status::invalid_activation,
       "activation value 255"},
      {"2^62 input elements: bytes past 64 bits",
       [](pw_params& p) { p.n = p.c_in = 1 << 15, p.h = p.w = 1 << 16, p.c_out = 1; }, status::size_overflow, ""},
  };
  for (const pw_case& c : pw_cases) {
    INFO(c.what);
    pw_params p = valid_pointwise();
    c.change(p);
    // can_implement does not know the element type, so not the byte counts.
    expect_backward_rejected<TestType>(p, c.expected, c.detail, c.expected != status::size_overflow);
  }
}

TEMPLATE_TEST_CASE("backward validation: unknown variant values", "[validation][backward]", float, dsconv::half,
                   dsconv::bfloat16) {
  for (const pass ps : {pass::data, pass::weight}) {
    for (const int v : {-1, 1000}) {
      INFO("variant value " << v);
      backward_buffers<TestType> d(counts_of(valid_depthwise()), ps);
      const auto dv = static_cast<dsconv::depthwise_variant>(v);
      expect_refused(status::invalid_variant, "variant value " + std::to_string(v), d,
                     [&] { return invoke(valid_depthwise(), ps, d.args(), dv, false); });
      CHECK(can_implement<TestType>(dv, valid_depthwise(), ps) == status::invalid_variant);
      backward_buffers<TestType> w(counts_of(valid_pointwise()), ps);
      const auto pv = static_cast<dsconv::pointwise_variant>(v);
      expect_refused(status::invalid_variant, "variant value " + std::to_string(v), w,
                     [&] { return invoke(valid_pointwise(), ps, w.args(), pv, false); });
      CHECK(can_implement<TestType>(pv, valid_pointwise(), ps) == status::invalid_variant);
    }
  }
}

TEMPLATE_TEST_CASE("backward validation: null tensors", "[validation][backward]", float, dsconv::half,
                   dsconv::bfloat16) {
  const auto check = [](const auto& p) {
    for (const pass ps : {pass::data, pass::weight}) {
      INFO(op_name(p, ps));
      backward_buffers<TestType> b(counts_of(p), ps);
      const char* first = ps == pass::data ? "grad_output" : "input";
      const char* second = ps == pass::data ? "weight" : "grad_output";
      const char* grad = ps == pass::data ? "grad_input" : "grad_weight";
      call_args<TestType> a = b.args();
      a.first = nullptr;
      expect_refused(status::null_pointer, std::string(first) + " is null", b, [&] { return invoke(p, ps, a, {}, true); });
      a = b.args(), a.second = nullptr;
      expect_refused(status::null_pointer, std::string(second) + " is null", b, [&] { return invoke(p, ps, a, {}, true); });
      a = b.args(), a.grad = nullptr;
      expect_refused(status::null_pointer, std::string(grad) + " is null", b, [&] { return invoke(p, ps, a, {}, true); });
    }
  };
  check(valid_depthwise());
  check(valid_pointwise());
}

TEMPLATE_TEST_CASE("backward validation: a fused activation without its saved tensor", "[validation][backward]", float,
                   dsconv::half, dsconv::bfloat16) {
  for (const dsconv::activation act : {dsconv::activation::relu, dsconv::activation::silu}) {
    dw_params d = valid_depthwise();
    pw_params w = valid_pointwise();
    d.act = w.act = act;
    for (const pass ps : {pass::data, pass::weight}) {
      backward_buffers<TestType> bd(counts_of(d), ps), bw(counts_of(w), ps);
      call_args<TestType> ad = bd.args(), aw = bw.args();
      ad.saved = aw.saved = nullptr;
      expect_refused(status::missing_activation_tensor, "activation_saved", bd, [&] { return invoke(d, ps, ad, {}, true); });
      expect_refused(status::missing_activation_tensor, "activation_saved", bd, [&] { return invoke(d, ps, ad, {}, false); });
      expect_refused(status::missing_activation_tensor, "activation_saved", bw, [&] { return invoke(w, ps, aw, {}, true); });
      expect_refused(status::missing_activation_tensor, "activation_saved", bw, [&] { return invoke(w, ps, aw, {}, false); });
    }
  }
}

TEMPLATE_TEST_CASE("backward validation: a written buffer that overlaps another", "[validation][backward]", float,
                   dsconv::half, dsconv::bfloat16) {
  // One poisoned allocation holds the overlapping tensors: untouched() covers all of them.
  const auto check = [](const auto& p) {
    const counts c = counts_of(p);
    const std::size_t grad_data = c.input, grad_weight = c.weight;
    for (const pass ps : {pass::data, pass::weight}) {
      INFO(op_name(p, ps));
      backward_buffers<TestType> b(c, ps);
      guarded_output<TestType> arena(1024);
      TestType* a = arena.data();
      const std::size_t grad_count = ps == pass::data ? grad_data : grad_weight;
      struct overlap_case {
        const char* what;
        std::function<void(call_args<TestType>&)> place;
        std::string detail;
      };
      const char* first = ps == pass::data ? "grad_output" : "input";
      const char* second = ps == pass::data ? "weight" : "grad_output";
      const char* grad = ps == pass::data ? "grad_input" : "grad_weight";
      std::vector<overlap_case> cases = {
          {"the gradient is the first operand", [&](call_args<TestType>& x) { x.grad = a, x.first = a; },
           std::string(grad) + " overlaps " + first},
          {"the second operand starts on the gradient's last element",
           [&](call_args<TestType>& x) { x.grad = a, x.second = a + grad_count - 1; },
           std::string(grad) + " overlaps " + second},
          {"the saved activation tensor starts one element into the gradient",
           [&](call_args<TestType>& x) { x.grad = a, x.saved = a + 1; }, std::string(grad) + " overlaps activation_saved"},
          {"the workspace holds the gradient",
           [&](call_args<TestType>& x) { x.grad = a + 8, x.workspace = a, x.workspace_bytes = 64 * sizeof(TestType) + 64; },
           std::string(grad) + " overlaps workspace"},
          {"the workspace starts on the first operand's last element",
           [&](call_args<TestType>& x) {
             // (a short workspace: the range must reach no other buffer of the call)
             x.first = a, x.workspace = a + (ps == pass::data ? c.output : c.input) - 1, x.workspace_bytes = 64;
           },
           "workspace overlaps " + std::string(first)},
      };
      // The depthwise data gradient takes no workspace (it ignores the options' one).
      if (ps == pass::data && std::is_same<std::decay_t<decltype(p)>, dw_params>::value) cases.resize(3);
      if (ps == pass::weight) {
        cases.push_back({"grad_bias starts on grad_weight's last element",
                         [&](call_args<TestType>& x) { x.grad = a, x.grad_bias = a + grad_weight - 1; },
                         "grad_weight overlaps grad_bias"});
        cases.push_back({"grad_weight starts on grad_bias's last element",
                         [&](call_args<TestType>& x) { x.grad_bias = a, x.grad = a + c.bias - 1; },
                         "grad_weight overlaps grad_bias"});
        cases.push_back({"grad_bias lies inside grad_output",
                         [&](call_args<TestType>& x) { x.second = a, x.grad_bias = a + 5; }, "grad_bias overlaps grad_output"});
      }
      for (const overlap_case& oc : cases) {
        INFO(oc.what);
        call_args<TestType> x = b.args();
        oc.place(x);
        auto q = p;
        q.act = dsconv::activation::relu;  // so that the saved tensor is one of the call's buffers
        const unsigned long long launches = launches_so_far();
        CHECK(invoke(q, ps, x, {}, false) == status::overlapping_buffers);
        INFO("last_error_detail(): " << dsconv::last_error_detail());
        CHECK(std::string(dsconv::last_error_detail()).find(oc.detail) != std::string::npos);
        CHECK(launches_so_far() == launches);
        CHECK(arena.untouched());
        CHECK(b.untouched());
      }
    }
  };
  check(valid_depthwise());
  check(valid_pointwise());
}

TEMPLATE_TEST_CASE("backward validation: buffer ranges that wrap the address space", "[validation][backward]", float,
                   dsconv::half, dsconv::bfloat16) {
  const auto check = [](const auto& p) {
    for (const pass ps : {pass::data, pass::weight}) {
      INFO(op_name(p, ps));
      backward_buffers<TestType> b(counts_of(p), ps);
      call_args<TestType> a = b.args();
      a.grad = near_top_of_address_space<TestType>();
      expect_refused(status::size_overflow, "range wraps", b, [&] { return invoke(p, ps, a, {}, true); });
      a = b.args(), a.first = near_top_of_address_space<TestType>();
      expect_refused(status::size_overflow, "range wraps", b, [&] { return invoke(p, ps, a, {}, true); });
    }
  };
  check(valid_depthwise());
  check(valid_pointwise());
}

TEMPLATE_TEST_CASE("backward validation: split_k with less workspace than it needs", "[validation][backward]", float,
                   dsconv::half, dsconv::bfloat16) {
  // A long K (the weight pass's n*h*w) where split_k applies.
  pw_params p = valid_pointwise();
  p.n = 4, p.h = p.w = 32, p.c_in = 16, p.c_out = 16;
  const std::size_t needed = dsconv::pointwise_backward_weight_workspace_size<TestType>(p);
  REQUIRE(needed > 0);
  REQUIRE(dsconv::can_implement_backward_weight<TestType>(dsconv::pointwise_variant::split_k, p) == status::success);
  const std::size_t in = static_cast<std::size_t>(p.n) * p.c_in * p.h * p.w, out = static_cast<std::size_t>(p.n) * p.c_out * p.h * p.w;
  backward_buffers<TestType> b({in, out, static_cast<std::size_t>(p.c_out) * p.c_in, static_cast<std::size_t>(p.c_out)},
                               pass::weight);
  REQUIRE(b.workspace_floats * sizeof(float) >= needed);
  for (const std::size_t given : {std::size_t{0}, needed - 1}) {
    INFO("workspace of " << given << " bytes, " << needed << " needed");
    call_args<TestType> a = b.args();
    a.workspace_bytes = given;
    if (given == 0) a.workspace = nullptr;
    expect_refused(status::insufficient_workspace, "workspace", b,
                   [&] { return invoke(p, pass::weight, a, dsconv::pointwise_variant::split_k, false); });
  }
}
