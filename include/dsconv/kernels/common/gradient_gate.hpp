#pragma once
// dL/dz = dL/dy * act'(saved) for a run of elements, as the backward kernels read grad_output
// of a layer with a fused activation (activation.hpp: activation_gradient). One out-of-line
// function per run width and type: the derivative's six cases inlined at every element of
// every staging loop multiplied the kernels' code (and their compile time) several times
// over, and a call per run costs nothing next to the loads it follows.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "activation.hpp"
#include "words.hpp"

namespace dsconv {
namespace detail {

// The tensor a backward kernel multiplies grad_output by act'() of as it reads it: the one the
// forward saved (activation_saved), laid out as grad_output; saved == nullptr: none.
template <class T>
struct gate_tensor {
  const T* saved;
  activation act;  // the layer's, or saved_derivative where `saved` holds act'(z)
};

template <int V, class T>
DSCONV_DEVICE DSCONV_NOINLINE platform::vec<float, V> gate_run(const platform::vec<T, V> dy, const platform::vec<T, V> saved,
                                                               activation act) {
  platform::vec<float, V> dz;
  for (int e = 0; e < V; ++e) dz[e] = to_float(dy[e]) * activation_gradient(to_float(saved[e]), act);
  return dz;
}

// One element of dz: grad_output[off], times act'(saved[off]) where the layer fused an activation.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE float gated_load(const T* __restrict__ grad_output, gate_tensor<T> gate, index_t off) {
  return gate.saved ? gate_run<1>(platform::load_vec<1>(grad_output + off), platform::load_vec<1>(gate.saved + off), gate.act)[0]
                    : to_float(platform::load(grad_output + off));
}

// The gates the register kernels apply inline, to each word of grad_output as it arrives
// (a compile-time kind, so that no per-element switch stands between a band's loads and its
// arithmetic): none; clamp, relu's and relu6's 0/1 derivative from the saved output; scale, the
// saved tensor being act'(z) itself (saved_derivative: any activation), one multiply (16-bit
// elements two to an instruction where the target multiplies packed pairs). silu, sigmoid and
// hardswish from their saved input z stay with the tiled kernels: silu's derivative from z had
// cost the register kernels about 10 instructions an element (two of them on the special-function
// unit), 4.6-11 instructions per DRAM byte on the networks' gated layers (sm_90 SASS).
enum class gate_kind { none, clamp, scale };

// The kind for activation `a` (saved_derivative: the forward saved the derivative); none also
// where no register gate stands for it (register_gated says which).
DSCONV_HOST_DEVICE constexpr gate_kind gate_kind_of(activation a) {
  return a == activation::relu || a == activation::relu6 ? gate_kind::clamp
         : a == saved_derivative                          ? gate_kind::scale
                                                          : gate_kind::none;
}
constexpr bool register_gated(activation a) { return a == activation::none || gate_kind_of(a) != gate_kind::none; }

// with_activation for the store of a kernel that also runs a data gradient's transposed problem
// (G != none: grad_output through the gate), whose activation is none and which keeps no
// pre-activation (transposed_problem): a gated form compiles the store of none only, not
// the six activations' (nhwc_matrix had compiled its whole walk six times over for nothing).
template <gate_kind G, class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void with_output_activation(activation a, F&& f) {
  if constexpr (G != gate_kind::none)
    f(std::integral_constant<activation, activation::none>{});
  else
    with_activation(a, f);
}

// The clamp gate: dy * (saved > 0 and not saved >= upper), upper 6 for relu6 and NaN for relu
// (nothing is >= NaN, so the second test always passes). The same factor as
// activation_gradient's for every saved value (infinities and NaN included), and the same
// product: a NaN or infinite dy where the gate is closed still gives NaN, as in the other kernels.
struct register_gate {
  const void* saved;    // the tensor the forward saved, laid out as grad_output; nullptr: no gate
  float upper;          // clamp: 6 (relu6) or NaN (relu)
  unsigned upper_pair;  // clamp, 16-bit elements: upper in both halves of a word (platform clamp_gated_word)
};

// The clamp gate of relu or relu6 (`act`), for a kernel that reads the saved tensor itself.
template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE register_gate clamp_gate(activation act) {
  const float upper = act == activation::relu6 ? 6.f : __builtin_nanf("");
  unsigned pair = 0;
  if constexpr (sizeof(T) == 2) pair = narrow_word(upper, upper, static_cast<const T*>(nullptr));
  return {nullptr, upper, pair};
}

template <class T>
register_gate make_register_gate(const gate_tensor<T>& gate) {
  register_gate g = clamp_gate<T>(gate.act);
  g.saved = gate.saved;
  return g;
}

// One element of dz from dy and the saved value at its place.
template <gate_kind G>
DSCONV_DEVICE DSCONV_FORCEINLINE float gated_value(float dy, float saved, const register_gate& gate) {
  if constexpr (G == gate_kind::clamp) return dy * (saved > 0.f && !(saved >= gate.upper) ? 1.f : 0.f);
  if constexpr (G == gate_kind::scale) return dy * saved;
  return dy;
}

// A word dy of grad_output gated by the saved word at the same place, as a word of T again (the
// clamp gate's x * 1 and x * 0 are exact in T, so widening it gives the gated floats; the scale
// gate's product is rounded to T once, which the packed product of two 16-bit elements does
// too: their exact product fits a float): 16-bit words packed where the target can
// (platform clamp_gated_word, scaled_word), else widened, gated and narrowed. Gating the words
// as they arrive frees the saved words' registers before the row is widened.
template <class T, gate_kind G>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned gated_word(unsigned dy, unsigned saved, const register_gate& gate) {
  if constexpr (G == gate_kind::clamp && sizeof(T) == 2 && packed_gate<T>()) {
    return clamp_gated_word<T>(dy, saved, gate.upper_pair);
  } else if constexpr (G == gate_kind::scale && sizeof(T) == 2 && packed_scale<T>()) {
    return scaled_word<T>(dy, saved);
  } else {
    constexpr int E = elements_per_word<T>();
    float d[E], y[E];
    widen<T>(dy, d);
    widen<T>(saved, y);
DSCONV_UNROLL
    for (int e = 0; e < E; ++e) d[e] = gated_value<G>(d[e], y[e], gate);
    return narrow<T>(d);
  }
}

// W words of grad_output gated by the saved words at the same place (gated_word).
template <class T, gate_kind G, int W>
DSCONV_DEVICE DSCONV_FORCEINLINE platform::vec<unsigned, W> gated_words(platform::vec<unsigned, W> dy,
                                                                       const platform::vec<unsigned, W>& saved,
                                                                       const register_gate& gate) {
DSCONV_UNROLL
  for (int k = 0; k < W; ++k) dy[k] = gated_word<T, G>(dy[k], saved[k], gate);
  return dy;
}

}  // namespace detail
}  // namespace dsconv
