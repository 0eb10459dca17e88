// Including dsconv must not change the meaning of user code on the host platform: none of
// the CUDA spellings may leak out of the headers as macros, and user code may use those
// names for its own things.
#include <catch2/catch.hpp>

#include <dsconv/dsconv.hpp>

#if defined(DSCONV_PLATFORM_HOST)
#if defined(__shared__) || defined(__global__) || defined(__device__) || defined(__host__) || defined(__constant__)
#error "a CUDA qualifier leaked out of dsconv's headers"
#endif
#if defined(threadIdx) || defined(blockIdx) || defined(blockDim) || defined(gridDim) || defined(warpSize)
#error "a CUDA built-in variable leaked out of dsconv's headers"
#endif
#if defined(__syncthreads) || defined(__shfl_sync) || defined(__shfl_xor_sync) || defined(__ballot_sync) || \
    defined(__launch_bounds__) || defined(__forceinline__)
#error "a CUDA intrinsic leaked out of dsconv's headers"
#endif

namespace user_code {
// The CUDA names are free for user code to declare.
struct dim3_like {
  int x, y, z;
};
inline int threadIdx = 7;
inline dim3_like blockIdx{1, 2, 3};
inline int warpSize() { return 99; }
}  // namespace user_code

TEST_CASE("CUDA names are free for user code after including dsconv", "[platform]") {
  CHECK(user_code::threadIdx == 7);
  CHECK(user_code::blockIdx.z == 3);
  CHECK(user_code::warpSize() == 99);
}
#endif
