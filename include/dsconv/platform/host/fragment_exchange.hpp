#pragma once
// The host platform's matrix operations (warp_mma.hpp, wave_mfma.hpp) are warp-collective:
// every lane publishes the elements of its fragment registers, and after the warp barrier each
// lane reads the rows and columns its outputs need from the other lanes' (by the documented
// layout) and computes its own outputs. Products of 16-bit or tf32 operands are exact in
// fp32, and the sums run in fp32, as on the matrix units.

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "../float16.hpp"
#include "block_runner.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

// Faults unless the device and the code it runs offer matrix unit NEEDS (elsewhere a GPU
// traps) and the calling thread's warp is full and of that unit's width.
template <matrix_unit NEEDS>
inline block_runner* matrix_warp() {
  constexpr int lanes = matrix_unit_lanes(NEEDS);
  block_runner* runner = current_runner();
  if (!provides(runner->launch().matrix, NEEDS))
    throw std::logic_error("a matrix instruction the device (or the code compiled for it) does not have: "
                           "a GPU traps here");
  if (runner->launch().warp_size != lanes || runner->lanes_in_warp(runner->current().warp) != lanes)
    throw std::logic_error("this matrix operation needs a full warp of " + std::to_string(lanes) +
                           " lanes (run at warp width " + std::to_string(lanes) + ")");
  return runner;
}

// A lane's operands of a matrix operation as its products read them: its NA elements of A and
// NB of B, as floats. Each lane converts its own registers' elements before it publishes them,
// once, where every lane reading the rows and columns its outputs need had converted each
// element four times (or 16, on the AMD layout): 64 conversions a lane for an m16n8k16 product
// where 12 do, most of the time the 16-bit layer sweeps spent in the emulated instruction.
template <int NA, int NB>
struct lane_operands {
  float a[NA], b[NB];
};

// Publishes this lane's operands; after the warp barrier, a_of(l) and b_of(l) read lane l's.
// The instruction needs matrix unit NEEDS (matrix_warp).
template <matrix_unit NEEDS, int NA, int NB>
class operand_exchange {
 public:
  using operands = lane_operands<NA, NB>;
  static_assert(sizeof(operands) <= warp_gather_stride, "operands must fit a lane's slot");

  explicit operand_exchange(const operands& mine) {
    block_runner* runner = matrix_warp<NEEDS>();
    slots_ = runner->warp_gather(&mine, sizeof mine);
    lane_ = static_cast<int>(runner->current().lane);
  }
  // (Copied out, each part alone: the slots are bytes, not operands objects.)
  void a_of(int lane, float (&a)[NA]) const { std::memcpy(a, slot(lane) + offsetof(operands, a), sizeof a); }
  void b_of(int lane, float (&b)[NB]) const { std::memcpy(b, slot(lane) + offsetof(operands, b), sizeof b); }
  int lane() const { return lane_; }

 private:
  const unsigned char* slot(int lane) const { return slots_ + static_cast<std::size_t>(lane) * warp_gather_stride; }
  const unsigned char* slots_;
  int lane_;
};

// The 16-bit element in the low (upper = 0) or high half of a fragment register, as float.
inline float element_of(unsigned reg, int upper, const half*) {
  return detail::half_bits_to_float(static_cast<unsigned short>(upper ? reg >> 16 : reg & 0xffffu));
}
inline float element_of(unsigned reg, int upper, const bfloat16*) {
  return detail::bfloat16_bits_to_float(static_cast<unsigned short>(upper ? reg >> 16 : reg & 0xffffu));
}

// A lane's registers of 16-bit pairs as floats: element h of register r at 2 r + h.
template <class T, int R>
inline void unpack_pairs(const unsigned (&regs)[R], float (&out)[2 * R]) {
  const T* type = nullptr;
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) out[2 * r + h] = element_of(regs[r], h, type);
}

// acc[o] + sum_k a[o][k] * b[o][k] for a lane's four outputs of a matrix operation, each
// summed in fp32 in k order. The four sums advance side by side: one after another, each
// addition had waited on the one before (the tf32 operation was 40% of the float pointwise
// layer sweep's time).
template <int K>
inline void dot_accumulate(float (&acc)[4], const float* const (&a)[4], const float* const (&b)[4]) {
  float s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3];
  for (int k = 0; k < K; ++k) {
    s0 += a[0][k] * b[0][k];
    s1 += a[1][k] * b[1][k];
    s2 += a[2][k] * b[2][k];
    s3 += a[3][k] * b[3][k];
  }
  acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
