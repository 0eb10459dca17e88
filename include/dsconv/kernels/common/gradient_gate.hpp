#pragma once
// dL/dz = dL/dy * act'(saved) for a run of elements, as the backward kernels read grad_output
// of a layer with a fused activation (activation.hpp: activation_gradient). One out-of-line
// function per run width and type: the derivative's six cases inlined at every element of
// every staging loop multiplied the kernels' code (and their compile time) several times
// over, and a call per run costs nothing next to the loads it follows.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "activation.hpp"

namespace dsconv {
namespace detail {

// The tensor a backward kernel multiplies grad_output by act'() of as it reads it: the one the
// forward saved (activation_saved), laid out as grad_output; saved == nullptr: none.
template <class T>
struct gate_tensor {
  const T* saved;
  activation act;
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

}  // namespace detail
}  // namespace dsconv
