// The platform layer's kernel-side primitives, on every platform: coordinates, barriers,
// static and dynamic shared memory, warp shuffles, ballot and lane ids. Expected values are
// computed here on the host from CUDA's documented semantics, with the warp width the
// device reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <dsconv/dsconv.hpp>

namespace pf = dsconv::platform;

// Kernels have hidden visibility (DSCONV_KERNEL), which needs external linkage: a named
// namespace, not an anonymous one.
namespace platform_test_kernels {

constexpr unsigned block_threads = 256;

DSCONV_KERNEL void write_coordinates(unsigned* out) {
  const pf::dims t = pf::thread_idx(), b = pf::block_idx(), bd = pf::block_dim(), gd = pf::grid_dim();
  const unsigned long long block = (static_cast<unsigned long long>(b.z) * gd.y + b.y) * gd.x + b.x;
  const unsigned long long thread = (static_cast<unsigned long long>(t.z) * bd.y + t.y) * bd.x + t.x;
  pf::store(out + block * bd.volume() + thread, static_cast<unsigned>(block * 1000 + thread));
}

// Reverses each block's slice through static shared memory: only correct if the barrier
// makes every thread's write visible before any thread reads.
DSCONV_KERNEL void reverse_static_shared(const float* in, float* out) {
  DSCONV_SHARED_ARRAY(float, tile, [block_threads]);
  const unsigned t = pf::thread_idx().x, base = pf::block_idx().x * block_threads;
  tile[t] = pf::load(in + base + t);
  pf::sync_threads();
  pf::store(out + base + t, tile[block_threads - 1 - t]);
}

DSCONV_KERNEL void reverse_dynamic_shared(const float* in, float* out) {
  float* tile = pf::dynamic_shared<float>();
  const unsigned t = pf::thread_idx().x, n = pf::block_dim().x, base = pf::block_idx().x * n;
  tile[t] = pf::load(in + base + t);
  pf::sync_threads();
  pf::store(out + base + t, tile[n - 1 - t]);
}

// Several barriers in a loop: a running sum through shared memory.
DSCONV_KERNEL void prefix_sum_shared(int* out) {
  DSCONV_SHARED_ARRAY(int, values, [block_threads]);
  const unsigned t = pf::thread_idx().x;
  values[t] = static_cast<int>(t) + 1;
  pf::sync_threads();
  for (unsigned offset = 1; offset < block_threads; offset *= 2) {
    const int add = t >= offset ? values[t - offset] : 0;
    pf::sync_threads();
    values[t] += add;
    pf::sync_threads();
  }
  pf::store(out + pf::block_idx().x * block_threads + t, values[t]);
}

struct shuffle_results {
  int lane, warp_size, idx, xor1, down3, up5, idx_w8, xor_w16, sum;
  unsigned long long ballot;
  double wide;  // an 8-byte value through the shuffles
};

DSCONV_KERNEL void shuffles(shuffle_results* out) {
  const unsigned t = pf::thread_idx().x;
  const int v = static_cast<int>(t) * 7 + 3;
  shuffle_results r;
  r.lane = pf::lane_id();
  r.warp_size = pf::warp_size();
  r.idx = pf::shfl(v, 5);
  r.xor1 = pf::shfl_xor(v, 1);
  r.down3 = pf::shfl_down(v, 3u);
  r.up5 = pf::shfl_up(v, 5u);
  r.idx_w8 = pf::shfl(v, 2, 8);
  r.xor_w16 = pf::shfl_xor(v, 9, 16);
  int sum = v;
  for (int mask = pf::warp_size() / 2; mask > 0; mask /= 2) sum += pf::shfl_xor(sum, mask);
  r.sum = sum;
  r.ballot = pf::ballot(t % 3 == 0);
  r.wide = pf::shfl_xor(static_cast<double>(v) + 0.25, 2);
  pf::store(out + pf::block_idx().x * pf::block_dim().x + t, r);
}

// Each thread moves one 16-byte chunk into shared memory, every third one as zero-fill;
// then the block writes shared memory back out in reverse chunk order (so the barrier must
// have published other threads' copies).
DSCONV_KERNEL void async_copy_round_trip(const float* in, float* out) {
  DSCONV_SHARED_ARRAY(float, tile, [64 * 4]);
  const unsigned t = pf::thread_idx().x;
  pf::async_copy_16(tile + 4 * t, in + 4 * t, t % 3 != 0 ? 16 : 0);
  pf::async_copy_wait();
  pf::sync_threads();
  const unsigned src = 63 - t;
  for (int i = 0; i < 4; ++i) pf::store(out + 4 * t + i, tile[4 * src + i]);
}

// Each of 32 threads copies 16 bytes in each of three commit groups (the last copies 8 bytes
// and zero-fills the rest), waits until at most one group is pending and reads back its
// copies into `early`, then waits for all and reads them into `late`. Only the first two
// groups are certain in `early`.
DSCONV_KERNEL void async_copy_groups(const float* in, float* early, float* late) {
  DSCONV_SHARED_ARRAY(float, tile, [3 * 32 * 4]);
  const unsigned t = pf::thread_idx().x;
  for (int g = 0; g < 3; ++g)
    for (int i = 0; i < 4; ++i) pf::shared_store(tile + (g * 32 + t) * 4 + i, -1.f);
  for (int g = 0; g < 3; ++g) {
    const unsigned at = (g * 32 + t) * 4;
    pf::async_copy_16(tile + at, in + at, g == 2 ? 8 : 16);
    pf::async_copy_commit();
  }
  pf::async_copy_wait_pending<1>();
  // The two groups waited for. The host also reads the third, which it has not landed yet
  // (the check that it lands copies as late as a GPU may); on a GPU that read would race
  // with the copy still in flight, as compute-sanitizer's racecheck reports.
#if defined(DSCONV_PLATFORM_HOST)
  const unsigned early_groups = 3;
#else
  const unsigned early_groups = 2;
#endif
  for (unsigned i = 0; i < early_groups * 4; ++i) {
    const unsigned at = (i / 4 * 32 + t) * 4 + i % 4;
    pf::store(early + at, pf::shared_load(tile + at));
  }
  pf::async_copy_wait();
  for (unsigned i = 0; i < 3 * 4; ++i) {
    const unsigned at = (i / 4 * 32 + t) * 4 + i % 4;
    pf::store(late + at, pf::shared_load(tile + at));
  }
}

// Each thread copies floats 4t and 4t + 1 as one 8-byte piece to shared floats 4t + 1 and
// 4t + 2 (8-byte aligned, off a 16-byte slot) and float 4t + 3 as a 4-byte one to 4t + 3, every
// fifth thread's 8-byte piece and every third's 4-byte one zero-filled (whole false), over
// shared memory holding -1; then it writes its four shared floats out (float 4t stays -1:
// narrower copies land only their own bytes).
DSCONV_KERNEL void narrow_async_copies(const float* in, float* out) {
  DSCONV_SHARED_ARRAY(float, tile, [32 * 4]);
  const unsigned t = pf::thread_idx().x;
  for (int i = 0; i < 4; ++i) pf::shared_store(tile + 4 * t + i, -1.f);
  pf::async_copy_whole<8>(tile + 4 * t + 2, in + 4 * t, t % 5 != 0);
  pf::async_copy_whole<4>(tile + 4 * t + 1, in + 4 * t + 3, t % 3 != 0);
  pf::async_copy_wait();
  for (int i = 0; i < 4; ++i) pf::store(out + 4 * t + i, pf::shared_load(tile + 4 * t + i));
}

// A copy whose source is 4 bytes off 16-byte alignment: cp.async faults on that; and one of 8
// bytes 4 bytes off 8-byte alignment.
DSCONV_KERNEL void misaligned_async_copy(const float* in) {
  DSCONV_SHARED_ARRAY(float, tile, [8]);
  pf::async_copy_16(tile, in + 1, 16);
  pf::async_copy_wait();
}
DSCONV_KERNEL void misaligned_narrow_async_copy(const float* in) {
  DSCONV_SHARED_ARRAY(float, tile, [8]);
  pf::async_copy_whole<8>(tile + 2, in + 1, true);
  pf::async_copy_wait();
}

// One warp loads four 8x8 matrices of 16-bit values with ldmatrix (transposed if Trans). Lane
// l owns row l % 8 of matrix l / 8, element c of it holding 8 * l + c, and stores it at a
// scattered shared row (3l mod 32), whose address it passes; it writes the four registers it
// receives to out[4l ...].
template <bool Trans>
DSCONV_KERNEL void ldmatrix_rows(unsigned* out) {
  constexpr int N = 4;
  DSCONV_SHARED_ARRAY(unsigned short, rows, [32 * 8]);
  const unsigned l = pf::thread_idx().x, stored = l * 3 % 32;
  for (unsigned c = 0; c < 8; ++c) pf::shared_store(&rows[stored * 8 + c], static_cast<unsigned short>(8 * l + c));
  pf::sync_threads();
  unsigned r[N];
  pf::ldmatrix_x4<Trans>(r, &rows[stored * 8]);
  for (int i = 0; i < N; ++i) pf::store(out + N * l + i, r[i]);
}


// One warp multiplies A (16 x K, row-major) by B (K x 8, row-major) on tensor cores, each
// lane packing its fragments by the PTX layout written out here, independently of the
// platform's code: D[m][n] = sum_k A[m][k] B[k][n].
template <class T>
DSCONV_KERNEL void warp_mma_product(const T* a, const T* b, float* d) {
  const int lane = static_cast<int>(pf::thread_idx().x), g = lane / 4, t = lane % 4;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  unsigned af[4], bf[2];
  if constexpr (sizeof(T) == 2) {  // m16n8k16: two 16-bit elements per register, lower k low
    const auto bits = [](T v) { return static_cast<unsigned>(v.bits); };
    const auto a_pair = [&](int row, int col) { return bits(a[row * 16 + col]) | bits(a[row * 16 + col + 1]) << 16; };
    const auto b_pair = [&](int row, int col) { return bits(b[row * 8 + col]) | bits(b[(row + 1) * 8 + col]) << 16; };
    af[0] = a_pair(g, 2 * t), af[1] = a_pair(g + 8, 2 * t), af[2] = a_pair(g, 2 * t + 8), af[3] = a_pair(g + 8, 2 * t + 8);
    bf[0] = b_pair(2 * t, g), bf[1] = b_pair(2 * t + 8, g);
    pf::mma_16x8x16<T>(acc, af, bf);
  } else {  // m16n8k8 tf32
    const auto bits = [](float v) { return dsconv::detail::float_bits(pf::round_to_tf32(v)); };
    af[0] = bits(a[g * 8 + t]), af[1] = bits(a[(g + 8) * 8 + t]), af[2] = bits(a[g * 8 + t + 4]);
    af[3] = bits(a[(g + 8) * 8 + t + 4]);
    bf[0] = bits(b[t * 8 + g]), bf[1] = bits(b[(t + 4) * 8 + g]);
    pf::mma_16x8x8_tf32(acc, af, bf);
  }
  d[g * 8 + 2 * t] = acc[0], d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2], d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

// One warp multiplies A = a + a_small (16 x 8) by B = b + b_small (8 x 8), every part's
// elements already tf32, packed by the tf32 layout written out here: into d_split by the
// split form, into d_three by the three m16n8k8 products the split form documents, in its
// order, both starting from `start`.
DSCONV_KERNEL void warp_mma_split_product(const float* parts, float start, float* d_split, float* d_three) {
  const int lane = static_cast<int>(pf::thread_idx().x), g = lane / 4, t = lane % 4;
  const auto bits = [](float v) { return dsconv::detail::float_bits(v); };
  // parts: a, a_small (16 x 8 each), then b, b_small (8 x 8 each), row-major
  const auto a_frag = [&](const float* m, unsigned (&f)[4]) {
    f[0] = bits(m[g * 8 + t]), f[1] = bits(m[(g + 8) * 8 + t]), f[2] = bits(m[g * 8 + t + 4]);
    f[3] = bits(m[(g + 8) * 8 + t + 4]);
  };
  const auto b_frag = [&](const float* m, unsigned (&f)[2]) { f[0] = bits(m[t * 8 + g]), f[1] = bits(m[(t + 4) * 8 + g]); };
  unsigned a[4], a_small[4], b[2], b_small[2];
  a_frag(parts, a), a_frag(parts + 128, a_small), b_frag(parts + 256, b), b_frag(parts + 320, b_small);
  float split[4] = {start, start, start, start}, three[4] = {start, start, start, start};
  pf::mma_16x8x8_tf32_split(split, a, a_small, b, b_small);
  pf::mma_16x8x8_tf32(three, a_small, b);
  pf::mma_16x8x8_tf32(three, a, b_small);
  pf::mma_16x8x8_tf32(three, a, b);
  for (int r = 0; r < 4; ++r) {
    const int at = (g + 8 * (r / 2)) * 8 + 2 * t + r % 2;
    d_split[at] = split[r], d_three[at] = three[r];
  }
}

// The same with Turing's instruction, m16n8k8 with half operands (K = 8): a[0] = A[g][2t, 2t+1],
// a[1] = A[g+8][2t, 2t+1], b[0] = B[2t, 2t+1][g].
DSCONV_KERNEL void turing_mma_product(const dsconv::half* a, const dsconv::half* b, float* d) {
  const int lane = static_cast<int>(pf::thread_idx().x), g = lane / 4, t = lane % 4;
  const auto bits = [](dsconv::half v) { return static_cast<unsigned>(v.bits); };
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const unsigned af[2] = {bits(a[g * 8 + 2 * t]) | bits(a[g * 8 + 2 * t + 1]) << 16,
                          bits(a[(g + 8) * 8 + 2 * t]) | bits(a[(g + 8) * 8 + 2 * t + 1]) << 16};
  const unsigned bf[1] = {bits(b[2 * t * 8 + g]) | bits(b[(2 * t + 1) * 8 + g]) << 16};
  pf::mma_16x8x8_f16(acc, af, bf);
  d[g * 8 + 2 * t] = acc[0], d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2], d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

// One wave of 64 lanes multiplies A (16 x K, row-major) by B (K x 16, row-major) on AMD
// matrix cores, each lane packing its fragments by the MFMA layout written out here,
// independently of the platform's code: with q = l / 16, lane l holds A[l % 16][4q .. 4q+3]
// and B[4q .. 4q+3][l % 16] (16-bit types, K = 16) or A[l % 16][q] and B[q][l % 16] (float,
// K = 4), and gets D[4q + r][l % 16] in d[r].
template <class T>
DSCONV_KERNEL void wave_mfma_product(const T* a, const T* b, float* d) {
  const int lane = static_cast<int>(pf::thread_idx().x), i = lane % 16, q = lane / 16;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if constexpr (sizeof(T) == 2) {
    const auto bits = [](T v) { return static_cast<unsigned>(v.bits); };
    unsigned af[2], bf[2];
    for (int h = 0; h < 2; ++h) {
      const int k = 4 * q + 2 * h;
      af[h] = bits(a[i * 16 + k]) | bits(a[i * 16 + k + 1]) << 16;
      bf[h] = bits(b[k * 16 + i]) | bits(b[(k + 1) * 16 + i]) << 16;
    }
    pf::mfma_16x16x16<T>(acc, af, bf);
  } else {
    pf::mfma_16x16x4_f32(acc, a[i * 4 + q], b[q * 16 + i]);
  }
  for (int r = 0; r < 4; ++r) d[(4 * q + r) * 16 + i] = acc[r];
}

}  // namespace platform_test_kernels

namespace {

using namespace platform_test_kernels;

template <class T>
std::vector<T> run_and_download(std::size_t count, const pf::launch_config& cfg, void (*kernel)(T*)) {
  dsconv::device_buffer<T> out;
  REQUIRE(out.allocate(count) == dsconv::status::success);
  REQUIRE(pf::launch(kernel, cfg, out.data()) == dsconv::status::success);
  REQUIRE(dsconv::synchronize() == dsconv::status::success);
  std::vector<T> host;
  REQUIRE(out.download(host) == dsconv::status::success);
  return host;
}

pf::launch_config config(pf::dims grid, pf::dims block, std::size_t shared = 0) {
  pf::launch_config cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.shared_bytes = shared;
  cfg.name = "platform_test";
  return cfg;
}

std::vector<float> iota_floats(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  return v;
}

}  // namespace

TEST_CASE("every thread of a 3-D grid of 3-D blocks runs once with its coordinates", "[platform]") {
  const pf::dims grid{3, 2, 2}, block{8, 4, 2};
  const auto out = run_and_download<unsigned>(grid.volume() * block.volume(), config(grid, block), write_coordinates);
  for (std::size_t b = 0; b < grid.volume(); ++b)
    for (std::size_t t = 0; t < block.volume(); ++t) REQUIRE(out[b * block.volume() + t] == b * 1000 + t);
}

TEST_CASE("a barrier publishes static shared memory to the whole block", "[platform]") {
  const unsigned blocks = 7;
  const auto input = iota_floats(blocks * block_threads);
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.upload(input) == dsconv::status::success);
  REQUIRE(out.allocate(input.size()) == dsconv::status::success);
  REQUIRE(pf::launch(reverse_static_shared, config({blocks}, {block_threads}), in.data(), out.data()) ==
          dsconv::status::success);
  std::vector<float> host;
  REQUIRE(out.download(host) == dsconv::status::success);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < block_threads; ++t)
      REQUIRE(host[b * block_threads + t] == input[b * block_threads + block_threads - 1 - t]);
}

TEST_CASE("dynamic shared memory has the size of the launch", "[platform]") {
  const unsigned blocks = 5, threads = 96;
  const auto input = iota_floats(blocks * threads);
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.upload(input) == dsconv::status::success);
  REQUIRE(out.allocate(input.size()) == dsconv::status::success);
  REQUIRE(pf::launch(reverse_dynamic_shared, config({blocks}, {threads}, threads * sizeof(float)), in.data(),
                     out.data()) == dsconv::status::success);
  std::vector<float> host;
  REQUIRE(out.download(host) == dsconv::status::success);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) REQUIRE(host[b * threads + t] == input[b * threads + threads - 1 - t]);
}

TEST_CASE("repeated barriers in a loop order shared-memory phases", "[platform]") {
  const unsigned blocks = 3;
  const auto out = run_and_download<int>(blocks * block_threads, config({blocks}, {block_threads}), prefix_sum_shared);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < block_threads; ++t) REQUIRE(out[b * block_threads + t] == static_cast<int>((t + 1) * (t + 2) / 2));
}

TEST_CASE("warp shuffles, reductions and ballot follow the target's warp width", "[platform]") {
  pf::device_properties dev;
  REQUIRE(pf::get_device_properties(dev) == dsconv::status::success);
  const int ws = dev.warp_size;
  REQUIRE((ws == 32 || ws == 64 || (ws >= 1 && ws <= 64 && (ws & (ws - 1)) == 0)));
  const unsigned blocks = 2, threads = 128;
  const auto out = run_and_download<shuffle_results>(blocks * threads, config({blocks}, {threads}), shuffles);
  auto value = [](int t) { return t * 7 + 3; };
  for (unsigned b = 0; b < blocks; ++b)
    for (int t = 0; t < static_cast<int>(threads); ++t) {
      INFO("block " << b << " thread " << t << " warp size " << ws);
      const shuffle_results& r = out[b * threads + t];
      const int lane = t % ws, warp0 = t - lane;
      auto in_segment = [&](int src, int width) { return (src / width) == (lane / width) ? warp0 + src : t; };
      const int w8 = ws < 8 ? ws : 8, w16 = ws < 16 ? ws : 16;
      REQUIRE(r.lane == lane);
      REQUIRE(r.warp_size == ws);
      REQUIRE(r.idx == value(warp0 + 5 % ws));
      REQUIRE(r.xor1 == value(in_segment(lane ^ 1, ws)));
      REQUIRE(r.down3 == value(lane + 3 < ws ? t + 3 : t));
      REQUIRE(r.up5 == value(lane >= 5 ? t - 5 : t));
      REQUIRE(r.idx_w8 == value(warp0 + (lane / w8) * w8 + 2 % w8));
      REQUIRE(r.xor_w16 == value(in_segment(lane ^ 9, w16)));
      int sum = 0;
      unsigned long long ballot = 0;
      for (int l = 0; l < ws; ++l) {
        sum += value(warp0 + l);
        if ((warp0 + l) % 3 == 0) ballot |= 1ULL << l;
      }
      REQUIRE(r.sum == sum);
      REQUIRE(r.ballot == ballot);
      REQUIRE(r.wide == static_cast<double>(value(in_segment(lane ^ 2, ws))) + 0.25);
    }
}

TEST_CASE("asynchronous copies to shared memory copy or zero-fill 16 bytes", "[platform]") {
  const auto input = iota_floats(64 * 4);
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.upload(input) == dsconv::status::success);
  REQUIRE(out.allocate(input.size()) == dsconv::status::success);
  REQUIRE(pf::launch(async_copy_round_trip, config({1}, {64}), in.data(), out.data()) == dsconv::status::success);
  std::vector<float> host;
  REQUIRE(out.download(host) == dsconv::status::success);
  for (unsigned t = 0; t < 64; ++t) {
    const unsigned src = 63 - t;
    for (unsigned i = 0; i < 4; ++i) REQUIRE(host[4 * t + i] == (src % 3 != 0 ? input[4 * src + i] : 0.f));
  }
}

TEST_CASE("asynchronous copies of 8 and 4 bytes copy or zero-fill their own bytes only", "[platform]") {
  const auto input = iota_floats(32 * 4);
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.upload(input) == dsconv::status::success);
  REQUIRE(out.allocate(input.size()) == dsconv::status::success);
  REQUIRE(pf::launch(narrow_async_copies, config({1}, {32}), in.data(), out.data()) == dsconv::status::success);
  std::vector<float> host;
  REQUIRE(out.download(host) == dsconv::status::success);
  for (unsigned t = 0; t < 32; ++t) {
    INFO("thread " << t);
    CHECK(host[4 * t] == -1.f);
    CHECK(host[4 * t + 1] == (t % 3 != 0 ? input[4 * t + 3] : 0.f));
    CHECK(host[4 * t + 2] == (t % 5 != 0 ? input[4 * t] : 0.f));
    CHECK(host[4 * t + 3] == (t % 5 != 0 ? input[4 * t + 1] : 0.f));
  }
}

TEST_CASE("asynchronous copies complete by commit group", "[platform]") {
  const auto input = iota_floats(3 * 32 * 4);
  dsconv::device_buffer<float> in, early, late;
  REQUIRE(in.upload(input) == dsconv::status::success);
  REQUIRE(early.allocate(input.size()) == dsconv::status::success);
  REQUIRE(late.allocate(input.size()) == dsconv::status::success);
  REQUIRE(pf::launch(async_copy_groups, config({1}, {32}), in.data(), early.data(), late.data()) ==
          dsconv::status::success);
  std::vector<float> e, l;
  REQUIRE(early.download(e) == dsconv::status::success);
  REQUIRE(late.download(l) == dsconv::status::success);
  for (std::size_t i = 0; i < input.size(); ++i) {
    INFO("element " << i);
    const bool third_group = i >= 2 * 32 * 4, zero_filled = third_group && i % 4 >= 2;
    const float copied = zero_filled ? 0.f : input[i];
    CHECK(l[i] == copied);
    if (!third_group) CHECK(e[i] == copied);
#if defined(DSCONV_PLATFORM_HOST)
    // The host lands a copy only when a wait requires it (a GPU may land it earlier), so a
    // kernel that reads a stage it has not waited for reads stale data here.
    if (third_group) CHECK(e[i] == -1.f);
#endif
  }
}

#if defined(DSCONV_PLATFORM_HOST)
TEST_CASE("asynchronous copies between misaligned addresses fault, as cp.async does", "[platform]") {
  dsconv::device_buffer<float> in;
  REQUIRE(in.allocate(16) == dsconv::status::success);
  CHECK(pf::launch(misaligned_async_copy, config({1}, {1}), in.data()) == dsconv::status::kernel_fault);
  CHECK(std::string(dsconv::last_error_detail()).find("not both aligned to its size") != std::string::npos);
  CHECK(pf::launch(misaligned_narrow_async_copy, config({1}, {1}), in.data()) == dsconv::status::kernel_fault);
  CHECK(std::string(dsconv::last_error_detail()).find("not both aligned to its size") != std::string::npos);
}
#endif

template <bool Trans>
void check_ldmatrix() {
  constexpr int N = 4;
  const auto out = run_and_download<unsigned>(32 * N, config({1}, {32}), ldmatrix_rows<Trans>);
  // Element (row, column) of matrix i is 8 * (8i + row) + column.
  const auto element = [](int i, int row, int col) { return static_cast<unsigned>(8 * (8 * i + row) + col); };
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < N; ++i) {
      const int g = l / 4, t = l % 4;
      const unsigned lo = Trans ? element(i, 2 * t, g) : element(i, g, 2 * t);
      const unsigned hi = Trans ? element(i, 2 * t + 1, g) : element(i, g, 2 * t + 1);
      INFO("lane " << l << ", register " << i);
      CHECK(out[N * l + i] == (lo | hi << 16));
    }
}

// Whether the device (on the host platform: the emulated profile at its warp width) executes
// instructions that need `unit`.
bool has_matrix_instruction(pf::matrix_unit unit) {
  pf::device_properties dev;
  REQUIRE(pf::get_device_properties(dev) == dsconv::status::success);
  return pf::provides(dev.matrix, unit);
}

// Runs `product` (one warp of `lanes` computing D = A * B, A 16 x k and B k x n, both
// row-major) on small integers and halves, whose products and sums are exact in every
// operand type, and requires D to equal the exact product.
template <class T>
void check_matrix_product(void (*product)(const T*, const T*, float*), unsigned lanes, int k, int n) {
  std::vector<T> a(16 * k), b(k * n);
  for (int i = 0; i < 16 * k; ++i) a[i] = T(static_cast<float>((i * 7) % 9 - 4) * 0.5f);
  for (int i = 0; i < k * n; ++i) b[i] = T(static_cast<float>((i * 5) % 11 - 5));
  dsconv::device_buffer<T> d_a, d_b;
  dsconv::device_buffer<float> d_d;
  REQUIRE(d_a.upload(a) == dsconv::status::success);
  REQUIRE(d_b.upload(b) == dsconv::status::success);
  REQUIRE(d_d.allocate(16 * n) == dsconv::status::success);
  REQUIRE(pf::launch(product, config({1}, {lanes}), d_a.data(), d_b.data(), d_d.data()) == dsconv::status::success);
  REQUIRE(dsconv::synchronize() == dsconv::status::success);
  std::vector<float> d;
  REQUIRE(d_d.download(d) == dsconv::status::success);
  for (int m = 0; m < 16; ++m)
    for (int j = 0; j < n; ++j) {
      double expected = 0;
      for (int kk = 0; kk < k; ++kk)
        expected += static_cast<double>(static_cast<float>(a[m * k + kk])) * static_cast<float>(b[kk * n + j]);
      INFO("D[" << m << "][" << j << "]");
      REQUIRE(d[m * n + j] == expected);
    }
}

TEMPLATE_TEST_CASE("a warp matrix multiply-accumulate computes A * B with the documented fragment layout", "[platform]",
                   dsconv::half, dsconv::bfloat16, float) {
  // NVIDIA sm_80+ have it (sm_75 the half form), and the host platform emulating them;
  // elsewhere the pointwise tests check that the tensor-core variants decline or use the
  // other unit.
  if (!has_matrix_instruction(std::is_same<TestType, dsconv::half>::value ? pf::matrix_unit::mma_sync_f16
                                                                          : pf::matrix_unit::mma_sync))
    return;
  check_matrix_product<TestType>(warp_mma_product<TestType>, 32, sizeof(TestType) == 2 ? 16 : 8, 8);
}

TEST_CASE("the split tf32 product is its three products in order, bit for bit, and A * B to float's accuracy",
          "[platform]") {
  if (!has_matrix_instruction(pf::matrix_unit::mma_sync)) return;
  // Parts of irregular magnitudes, each cut to tf32 (the split form's operands), so that the
  // fp32 sums round and their order shows in the bits.
  std::vector<float> parts(2 * 128 + 2 * 64);
  std::uint32_t state = 12345u;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    const float scale = (i / 128 == 1 || (i >= 256 && (i - 256) / 64 == 1)) ? 1.f / 2048 : 1.f;  // the small parts
    const float v = (static_cast<float>(state >> 8) / 16777216.f * 4.f - 2.f) * scale;
    parts[i] = dsconv::detail::bits_float(dsconv::detail::float_bits(v) & 0xffffe000u);
  }
  const float start = 0.3f;
  dsconv::device_buffer<float> d_parts, d_split, d_three;
  REQUIRE(d_parts.upload(parts) == dsconv::status::success);
  REQUIRE(d_split.allocate(128) == dsconv::status::success);
  REQUIRE(d_three.allocate(128) == dsconv::status::success);
  REQUIRE(pf::launch(warp_mma_split_product, config({1}, {32}), d_parts.data(), start, d_split.data(),
                     d_three.data()) == dsconv::status::success);
  REQUIRE(dsconv::synchronize() == dsconv::status::success);
  std::vector<float> split, three;
  REQUIRE(d_split.download(split) == dsconv::status::success);
  REQUIRE(d_three.download(three) == dsconv::status::success);
  const float *a = parts.data(), *a_small = a + 128, *b = a + 256, *b_small = a + 320;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double exact = start, magnitude = std::fabs(start);  // A * B but a_small * b_small
      for (int k = 0; k < 8; ++k) {
        const double x = a[m * 8 + k], xs = a_small[m * 8 + k], y = b[k * 8 + n], ys = b_small[k * 8 + n];
        exact += x * y + xs * y + x * ys;
        magnitude += std::fabs(x * y);
      }
      INFO("D[" << m << "][" << n << "]");
      REQUIRE(dsconv::detail::float_bits(split[m * 8 + n]) == dsconv::detail::float_bits(three[m * 8 + n]));
      REQUIRE(std::fabs(split[m * 8 + n] - exact) <= 4e-6 * magnitude);  // 24 fp32 additions
    }
}

TEST_CASE("Turing's warp matrix multiply-accumulate (m16n8k8, half) computes A * B with the documented fragment layout",
          "[platform]") {
  if (!has_matrix_instruction(pf::matrix_unit::mma_sync_f16)) return;
  check_matrix_product<dsconv::half>(turing_mma_product, 32, 8, 8);
}

TEST_CASE("ldmatrix gives each lane the documented elements of 8x8 matrices, transposed or not", "[platform]") {
  // sm_75+ have it, and the host platform emulating them.
  if (!has_matrix_instruction(pf::matrix_unit::mma_sync_f16)) return;
  check_ldmatrix<false>();
  check_ldmatrix<true>();
}

#if defined(DSCONV_PLATFORM_HOST)
TEST_CASE("a matrix instruction the emulated device lacks faults, where a GPU traps", "[platform]") {
  const pf::device_properties before = dsconv::host::device();
  REQUIRE(dsconv::host::set_device("sm75") == dsconv::status::success);
  std::vector<dsconv::bfloat16> ab(16 * 16, dsconv::bfloat16(1.f));
  dsconv::device_buffer<dsconv::bfloat16> d_ab;
  dsconv::device_buffer<float> d_d;
  REQUIRE(d_ab.upload(ab) == dsconv::status::success);
  REQUIRE(d_d.allocate(16 * 8) == dsconv::status::success);
  // bf16 mma.sync is sm_80's; Turing has only the half form.
  const dsconv::status bf16 =
      pf::launch(warp_mma_product<dsconv::bfloat16>, config({1}, {32}), d_ab.data(), d_ab.data(), d_d.data());
  const std::string bf16_detail = dsconv::last_error_detail();
  REQUIRE(dsconv::host::set_device("gfx90a") == dsconv::status::success);
  const dsconv::status on_amd = pf::launch(turing_mma_product, config({1}, {32}),
                                           reinterpret_cast<const dsconv::half*>(d_ab.data()),
                                           reinterpret_cast<const dsconv::half*>(d_ab.data()), d_d.data());
  REQUIRE(dsconv::host::set_device(before) == dsconv::status::success);
  CHECK(bf16 == dsconv::status::kernel_fault);
  CHECK(on_amd == dsconv::status::kernel_fault);
  CHECK(bf16_detail.find("a GPU traps") != std::string::npos);
  CHECK(std::string(dsconv::last_error_detail()).find("a GPU traps") != std::string::npos);
}
#endif

TEMPLATE_TEST_CASE("a wave matrix multiply-accumulate computes A * B with the documented MFMA layout", "[platform]",
                   dsconv::half, dsconv::bfloat16, float) {
  // AMD gfx90a/gfx94x have it, and the host platform at warp width 64.
  if (!has_matrix_instruction(pf::matrix_unit::mfma)) return;
  check_matrix_product<TestType>(wave_mfma_product<TestType>, 64, sizeof(TestType) == 2 ? 16 : 4, 16);
}
