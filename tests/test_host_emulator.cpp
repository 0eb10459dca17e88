// The host platform's emulation of a GPU: barrier divergence and kernel exceptions end in a
// status (never a hang), worker threads and warp widths, shared-memory isolation, launch
// limits, and the global-memory traffic counters.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#if defined(DSCONV_PLATFORM_HOST)

namespace pf = dsconv::platform;
using dsconv::status;

namespace {

pf::launch_config config(pf::dims grid, pf::dims block, const char* name = "emulator_test", std::size_t shared = 0) {
  pf::launch_config cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.shared_bytes = shared;
  cfg.name = name;
  return cfg;
}

// Restores the emulator settings a test changes.
struct settings_guard {
  int workers = dsconv::host::worker_count(), warp = dsconv::host::warp_size();
  ~settings_guard() {
    dsconv::host::set_worker_count(workers);
    dsconv::host::set_warp_size(warp);
  }
};

DSCONV_KERNEL void early_return_before_barrier(int* out, unsigned leavers) {
  if (pf::thread_idx().x < leavers) return;
  pf::sync_threads();
  pf::store(out + pf::thread_idx().x, 1);
}

DSCONV_KERNEL void half_warp_shuffles(int* out) {
  int v = static_cast<int>(pf::thread_idx().x);
  if (pf::lane_id() < pf::warp_size() / 2) v = pf::shfl_xor(v, 1);
  pf::sync_threads();
  pf::store(out + pf::thread_idx().x, v);
}

struct lifetime_counter {
  std::atomic<int>* constructed;
  std::atomic<int>* destroyed;
  lifetime_counter(std::atomic<int>* c, std::atomic<int>* d) : constructed(c), destroyed(d) { constructed->fetch_add(1); }
  ~lifetime_counter() { destroyed->fetch_add(1); }
};

// Thread 5 throws while every other thread waits at the barrier: those must be unwound
// (their destructors run), and the launch must report the exception.
DSCONV_KERNEL void throw_while_others_wait(std::atomic<int>* constructed, std::atomic<int>* destroyed) {
  lifetime_counter guard{constructed, destroyed};
  if (pf::thread_idx().x == 5) throw std::runtime_error("injected failure");
  pf::sync_threads();
}

DSCONV_KERNEL void record_block_order(unsigned* order, std::atomic<unsigned>* next) {
  if (pf::thread_idx().x == 0) order[next->fetch_add(1)] = pf::block_idx().x;
}

DSCONV_KERNEL void count_block_runs(std::atomic<int>* runs) {
  if (pf::thread_idx().x == 0) runs[pf::block_idx().x].fetch_add(1);
}

// Each block stores its own index in static shared memory, waits, and checks that no other
// block (running on another worker) overwrote it.
DSCONV_KERNEL void shared_memory_isolation(int* mismatches) {
  DSCONV_SHARED unsigned owner[64];
  const unsigned t = pf::thread_idx().x;
  owner[t] = pf::block_idx().x;
  for (int round = 0; round < 20; ++round) {
    pf::sync_threads();
    if (owner[(t + round) % 64] != pf::block_idx().x) mismatches[pf::block_idx().x] = 1;
  }
}

DSCONV_KERNEL void read_unwritten_dynamic_shared(float* out) {
  pf::store(out + pf::thread_idx().x, pf::dynamic_shared<float>()[pf::thread_idx().x]);
}

DSCONV_KERNEL void noop(int*) {}

DSCONV_KERNEL void launch_inside_kernel(status* result) {
  if (pf::thread_idx().x == 0) *result = pf::launch(noop, config({1}, {1}), static_cast<int*>(nullptr));
}

int deep_recursion(int depth) {
  volatile char frame[256];
  frame[0] = static_cast<char>(depth);
  return depth == 0 ? frame[0] : deep_recursion(depth - 1) + 1;
}

DSCONV_KERNEL void uses_stack(int* out) { pf::store(out + pf::thread_idx().x, deep_recursion(100)); }

template <int Stride>
DSCONV_KERNEL void strided_load(const float* in, float* out) {
  const unsigned i = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  pf::store(out + i, pf::load(in + i * Stride));
}

DSCONV_KERNEL void vector_copy(const float* in, float* out) {
  const unsigned i = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  pf::store_vec<4>(out + 4 * i, pf::load_vec<4>(in + 4 * i));
}

}  // namespace

TEST_CASE("threads that return before a barrier others wait at are reported, not a hang", "[emulator]") {
  std::vector<int> out(256, 0);
  const status s = pf::launch(early_return_before_barrier, config({3}, {256}, "diverging"), out.data(), 17u);
  REQUIRE(s == status::barrier_divergence);
  const std::string detail = dsconv::last_error_detail();
  CHECK(detail.find("diverging") != std::string::npos);
  CHECK(detail.find("239 of 256") != std::string::npos);
  // Nobody passed the barrier.
  for (int v : out) REQUIRE(v == 0);
  // The emulator recovers: the next launch runs normally.
  REQUIRE(pf::launch(early_return_before_barrier, config({3}, {256}), out.data(), 0u) == status::success);
  for (int v : out) REQUIRE(v == 1);
}

TEST_CASE("a warp-collective operation reached by only part of a warp is divergence", "[emulator]") {
  std::vector<int> out(128, -1);
  REQUIRE(pf::launch(half_warp_shuffles, config({1}, {128}), out.data()) == status::barrier_divergence);
  CHECK(std::string(dsconv::last_error_detail()).find("warp") != std::string::npos);
}

TEST_CASE("an exception in one thread ends the block and unwinds the waiting threads", "[emulator]") {
  std::atomic<int> constructed{0}, destroyed{0};
  REQUIRE(pf::launch(throw_while_others_wait, config({1}, {64}), &constructed, &destroyed) == status::kernel_fault);
  // Threads 0-4 were waiting at the barrier; threads after the failure need not start.
  CHECK(constructed.load() >= 6);
  CHECK(destroyed.load() == constructed.load());
  CHECK(std::string(dsconv::last_error_detail()).find("injected failure") != std::string::npos);
  CHECK(std::string(dsconv::last_error_detail()).find("thread (5,0,0)") != std::string::npos);
}

TEST_CASE("one worker runs blocks in order; several workers run every block exactly once", "[emulator]") {
  settings_guard restore;
  const unsigned blocks = 200;
  REQUIRE(dsconv::host::set_worker_count(1) == status::success);
  std::vector<unsigned> order(blocks, ~0u);
  std::atomic<unsigned> next{0};
  REQUIRE(pf::launch(record_block_order, config({blocks}, {32}), order.data(), &next) == status::success);
  for (unsigned b = 0; b < blocks; ++b) REQUIRE(order[b] == b);

  for (int workers : {2, 3, 8}) {
    REQUIRE(dsconv::host::set_worker_count(workers) == status::success);
    std::vector<std::atomic<int>> runs(blocks);
    for (auto& r : runs) r = 0;
    REQUIRE(pf::launch(count_block_runs, config({blocks}, {64}), runs.data()) == status::success);
    for (unsigned b = 0; b < blocks; ++b) REQUIRE(runs[b].load() == 1);
    pf::device_properties dev;
    REQUIRE(pf::get_device_properties(dev) == status::success);
    CHECK(dev.multiprocessor_count == workers);
  }
  CHECK(dsconv::host::set_worker_count(0) == status::invalid_size);
}

TEST_CASE("the warp width is configurable to any power of two up to 64", "[emulator]") {
  settings_guard restore;
  for (int bad : {0, -32, 3, 48, 128}) CHECK(dsconv::host::set_warp_size(bad) == status::invalid_size);
  for (int width : {32, 64}) {
    REQUIRE(dsconv::host::set_warp_size(width) == status::success);
    pf::device_properties dev;
    REQUIRE(pf::get_device_properties(dev) == status::success);
    CHECK(dev.warp_size == width);
  }
}

TEST_CASE("static shared memory belongs to one block even with blocks on several workers", "[emulator]") {
  settings_guard restore;
  REQUIRE(dsconv::host::set_worker_count(4) == status::success);
  const unsigned blocks = 64;
  std::vector<int> mismatches(blocks, 0);
  REQUIRE(pf::launch(shared_memory_isolation, config({blocks}, {64}), mismatches.data()) == status::success);
  for (int m : mismatches) REQUIRE(m == 0);
}

TEST_CASE("dynamic shared memory that was never written reads as NaN", "[emulator]") {
  std::vector<float> out(32, 0.f);
  REQUIRE(pf::launch(read_unwritten_dynamic_shared, config({1}, {32}, "poisoned", 32 * sizeof(float)), out.data()) ==
          status::success);
  for (float v : out) REQUIRE(std::isnan(v));
}

TEST_CASE("launches beyond the device limits are refused before running", "[emulator]") {
  const auto before = dsconv::host::launch_count();
  int dummy = 0;
  CHECK(pf::launch(noop, config({1}, {2048}), &dummy) == status::invalid_launch_config);
  CHECK(pf::launch(noop, config({1}, {0}), &dummy) == status::invalid_launch_config);
  CHECK(pf::launch(noop, config({0}, {32}), &dummy) == status::invalid_launch_config);
  CHECK(pf::launch(noop, config({1, 70000}, {32}), &dummy) == status::invalid_launch_config);
  CHECK(pf::launch(noop, config({1}, {32}, "too much shared", 1 << 20), &dummy) == status::invalid_launch_config);
  CHECK(dsconv::host::launch_count() == before);
  REQUIRE(pf::launch(noop, config({1}, {32}), &dummy) == status::success);
  CHECK(dsconv::host::launch_count() == before + 1);
}

TEST_CASE("a launch from inside a kernel is refused", "[emulator]") {
  status inner = status::success;
  REQUIRE(pf::launch(launch_inside_kernel, config({1}, {4}), &inner) == status::success);
  CHECK(inner == status::launch_failed);
}

TEST_CASE("emulated threads have room for real stack frames", "[emulator]") {
  std::vector<int> out(256, 0);
  REQUIRE(pf::launch(uses_stack, config({2}, {256}), out.data()) == status::success);
  for (int v : out) REQUIRE(v == 100);
}

TEST_CASE("traffic counters group each warp's accesses into requests of 32-byte sectors", "[emulator][traffic]") {
  const int ws = dsconv::host::warp_size();
  const unsigned blocks = 4, threads = 128, n = blocks * threads;
  // 256-byte aligned allocations, so a warp's contiguous accesses start on a sector boundary.
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.allocate(n * 8 * 4) == status::success);
  REQUIRE(out.allocate(n * 4) == status::success);
  const std::uint64_t warps = n / ws;

  SECTION("coalesced float loads: warp_size * 4 bytes / 32 sectors per request") {
    dsconv::host::traffic_recorder rec;
    REQUIRE(pf::launch(strided_load<1>, config({blocks}, {threads}, "coalesced"), in.data(), out.data()) ==
            status::success);
    REQUIRE(rec.launches().size() == 1);
    const auto& r = rec.launches()[0];
    CHECK(r.kernel == "coalesced");
    CHECK(r.traffic.load_requests == warps);
    CHECK(r.traffic.load_sectors == warps * ((ws * 4 + 31) / 32));
    CHECK(r.traffic.load_bytes == n * 4ULL);
    CHECK(r.traffic.store_requests == warps);
    CHECK(r.traffic.store_sectors == warps * ((ws * 4 + 31) / 32));
    CHECK(r.traffic.store_bytes == n * 4ULL);
  }
  SECTION("a stride of 8 floats puts every lane in its own sector") {
    dsconv::host::traffic_recorder rec;
    REQUIRE(pf::launch(strided_load<8>, config({blocks}, {threads}), in.data(), out.data()) == status::success);
    const auto t = rec.total();
    CHECK(t.load_requests == warps);
    CHECK(t.load_sectors == n);
    CHECK(t.load_sectors_per_request() == Approx(ws));
  }
  SECTION("16-byte vector accesses: one request per warp, 16 bytes per lane") {
    dsconv::host::traffic_recorder rec;
    REQUIRE(pf::launch(vector_copy, config({blocks}, {threads}), in.data(), out.data()) == status::success);
    const auto t = rec.total();
    CHECK(t.load_requests == warps);
    CHECK(t.load_sectors == warps * ws * 16 / 32 + (ws * 16 < 32 ? warps : 0));
    CHECK(t.load_bytes == n * 16ULL);
    CHECK(t.store_sectors == t.load_sectors);
  }
  SECTION("a misaligned start costs one more sector per request") {
    dsconv::host::traffic_recorder rec;
    REQUIRE(pf::launch(strided_load<1>, config({blocks}, {threads}), in.data() + 1, out.data()) == status::success);
    CHECK(rec.total().load_sectors == warps * ((ws * 4 + 31) / 32 + 1));
  }
  SECTION("nothing is recorded once the recorder is gone") {
    std::vector<dsconv::host::launch_record> seen;
    {
      dsconv::host::traffic_recorder rec;
      REQUIRE(pf::launch(strided_load<1>, config({blocks}, {threads}), in.data(), out.data()) == status::success);
      seen = rec.launches();
    }
    dsconv::host::traffic_recorder later;
    CHECK(seen.size() == 1);
    CHECK(later.launches().empty());
  }
}

TEST_CASE("the build uses the context switch it was configured for", "[emulator]") {
#if defined(DSCONV_HOST_FIBER_UCONTEXT)
  CHECK(std::string(dsconv::host::context_switch_kind()) == "ucontext");
#else
  CHECK(std::string(dsconv::host::context_switch_kind()) == "assembly");
#endif
}

#endif  // DSCONV_PLATFORM_HOST
