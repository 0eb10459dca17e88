// The host platform's emulation of a GPU: barrier divergence (threads that return, or wait at
// another barrier) and kernel exceptions end in a status (never a hang); worker threads, warp
// widths and device profiles; thread schedules that expose races, and shared memory poisoned
// at every block start; launch limits of the profile; block orders; the global-memory traffic
// counters and the shared-memory bank model.
#include <catch2/catch.hpp>

#include <algorithm>
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
  int workers = dsconv::host::worker_count();
  pf::device_properties device = dsconv::host::device();
  dsconv::host::schedule schedule = dsconv::host::current_schedule();
  dsconv::host::block_order blocks = dsconv::host::current_block_order();
  ~settings_guard() {
    dsconv::host::set_worker_count(workers);
    dsconv::host::set_device(device);
    dsconv::host::set_schedule(schedule);
    dsconv::host::set_block_order(blocks);
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
  DSCONV_SHARED_ARRAY(unsigned, owner, [64]);
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

// Deliberately broken kernels: each has a bug a GPU would expose and the host platform must.

// Each thread writes its slot, then, with the barrier missing, reads the slot of the thread
// `distance` below it (the first threads their own): correct only if that thread happened to
// run first.
DSCONV_KERNEL void read_neighbour_without_barrier(float* out, unsigned distance) {
  DSCONV_SHARED_ARRAY(float, slots, [256]);
  const unsigned t = pf::thread_idx().x;
  pf::shared_store(slots + t, static_cast<float>(t));
  // (the barrier that belongs here is missing)
  pf::store(out + pf::block_idx().x * pf::block_dim().x + t, pf::shared_load(slots + (t >= distance ? t - distance : t)));
}

// Only block 0 fills the table; every block reads it: the others read memory they never wrote.
DSCONV_KERNEL void read_what_another_block_wrote(float* out) {
  DSCONV_SHARED_ARRAY(float, table, [64]);
  const unsigned t = pf::thread_idx().x;
  if (pf::block_idx().x == 0) pf::shared_store(table + t, 1.0f);
  pf::sync_threads();
  pf::store(out + pf::block_idx().x * 64 + t, pf::shared_load(table + t));
}

// Odd and even threads wait at two different barriers.
DSCONV_KERNEL void barriers_at_two_call_sites(int* out) {
  const unsigned t = pf::thread_idx().x;
  if (t % 2) {
    pf::sync_threads();
    pf::store(out + t, 1);
  } else {
    pf::sync_threads();
    pf::store(out + t, static_cast<int>(t) * 3);
  }
}

// 64 KiB of static shared memory: more than NVIDIA's 48 KiB per block, all of AMD's.
DSCONV_KERNEL void large_static_shared(float* out) {
  DSCONV_SHARED_ARRAY(float, big, [16 * 1024]);
  const unsigned t = pf::thread_idx().x;
  pf::shared_store(big + 16 * 1024 - 1 - t, 2.0f);
  pf::sync_threads();
  pf::store(out + t, pf::shared_load(big + 16 * 1024 - 1 - t));
}

// Records the order in which the threads of each block first run.
DSCONV_KERNEL void record_thread_order(unsigned* order, std::atomic<unsigned>* next) {
  const unsigned t = pf::thread_idx().x, n = pf::block_dim().x;
  order[pf::block_idx().x * n + next[pf::block_idx().x].fetch_add(1)] = t;
}

// Shared-memory access patterns with known bank wavefronts: lane l of each warp reads element
// (l * stride) % 1024 of a table of T (T a float, a half, or a 16-byte vector of floats).
template <class T>
DSCONV_KERNEL void strided_shared_read(float* out, unsigned stride) {
  DSCONV_SHARED_ARRAY(T, table, [1024]);
  const unsigned t = pf::thread_idx().x, lane = static_cast<unsigned>(pf::lane_id());
  for (unsigned i = t; i < 1024; i += pf::block_dim().x) pf::shared_store(table + i, T{});
  pf::sync_threads();
  const T v = pf::shared_load(table + lane * stride % 1024);
  float x;
  __builtin_memcpy(&x, &v, sizeof(x) < sizeof(v) ? sizeof(x) : sizeof(v));
  pf::store(out + t, x);
}

// A marked loop (for_each_strided) whose lanes idle in alternate iterations: lane l works in
// iterations j with (l + j) even, reading element j * threads + tid of `in` and storing it to
// shared word 32 * j + l / 2 (and to `out`). On a GPU each iteration is one request of half
// the lanes: consecutive floats (with gaps), shared words in distinct banks.
DSCONV_KERNEL void alternate_idle_lanes(const float* in, float* out) {
  float* s = pf::dynamic_shared<float>();
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);
  const int lane = pf::lane_id();
  int j = 0;
  dsconv::detail::for_each_strided<2>(4 * threads, {threads}, tid, threads, [&](const auto& at) {
    const int iteration = j++;
    if ((lane + iteration) % 2) return;
    const float v = pf::load(in + at.index());
    pf::shared_store(s + 32 * iteration + lane / 2, v);
    pf::store(out + at.index(), v);
  });
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
    // The device the planners see does not depend on how many CPU threads emulate it.
    pf::device_properties dev;
    REQUIRE(pf::get_device_properties(dev) == status::success);
    CHECK(dev.multiprocessor_count == dsconv::host::device().multiprocessor_count);
  }
  CHECK(dsconv::host::set_worker_count(0) == status::invalid_size);
}

TEST_CASE("plan-only launches are checked and recorded and run nothing", "[emulator]") {
  std::vector<std::atomic<int>> runs(4);
  const auto kernel = pf::registered<count_block_runs>();
  status planned, refused;
  std::vector<dsconv::host::launch_record> recorded;
  {
    dsconv::host::traffic_recorder recorder;
    dsconv::host::set_plan_only(true);
    planned = pf::launch(kernel, config({4}, {64}), runs.data());
    refused = pf::launch(kernel, config({4}, {4096}), runs.data());
    dsconv::host::set_plan_only(false);
    recorded = recorder.launches();
  }
  CHECK(planned == status::success);
  CHECK(refused == status::invalid_launch_config);
  for (const auto& r : runs) CHECK(r.load() == 0);
  REQUIRE(recorded.size() == 1);
  CHECK(recorded[0].kernel.find("count_block_runs") != std::string::npos);  // the registered name
  CHECK(recorded[0].grid.x == 4);
  CHECK(recorded[0].block.x == 64);
  // The same launch, planned no more, runs.
  REQUIRE(pf::launch(kernel, config({4}, {64}), runs.data()) == status::success);
  for (const auto& r : runs) CHECK(r.load() == 1);
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

std::size_t count_nan(const std::vector<float>& v) {
  std::size_t n = 0;
  for (float x : v) n += std::isnan(x);
  return n;
}

TEST_CASE("a read of another thread's shared-memory write without a barrier fails under the schedules", "[emulator][schedule]") {
  settings_guard restore;
  REQUIRE(dsconv::host::set_worker_count(1) == status::success);
  const unsigned blocks = 5, threads = 128;
  std::vector<float> out(blocks * threads);
  const auto run = [&](dsconv::host::schedule s, unsigned distance) {
    dsconv::host::set_schedule(s);
    std::fill(out.begin(), out.end(), 0.f);
    REQUIRE(pf::launch(read_neighbour_without_barrier, config({blocks}, {threads}), out.data(), distance) ==
            status::success);
    return count_nan(out);
  };
  using dsconv::host::schedule;
  const unsigned ws = static_cast<unsigned>(dsconv::host::warp_size()), warps = threads / ws;
  // Under ascending order every reader runs after the writer it needs: the race stays
  // hidden, as it did when threads always ran in that order.
  CHECK(run(schedule::ascending, 1) == 0);
  // In the other orders readers come first and read the poison.
  CHECK(run(schedule::descending, 1) == blocks * (threads - 1));
  CHECK(run(schedule::shuffle, 1) > 0);
  CHECK(run(schedule::rotate, 1) > 0);  // the default: one block in five runs descending
  // Warp-granular orders keep a warp's lanes ascending: within a warp the race stays hidden,
  // across warps it shows (lane 0 reads the warp below, which runs later).
  CHECK(run(schedule::warp_descending, 1) == blocks * (warps - 1));
  CHECK(run(schedule::warp_descending, ws) == blocks * (threads - ws));
  CHECK(run(schedule::warp_shuffle, ws) > 0);
}

TEST_CASE("each schedule runs a block's threads in its order", "[emulator][schedule]") {
  settings_guard restore;
  REQUIRE(dsconv::host::set_warp_size(32) == status::success);
  const unsigned threads = 128;
  const auto order_of = [&](dsconv::host::schedule s) {
    dsconv::host::set_schedule(s);
    std::vector<unsigned> order(threads, ~0u);
    std::atomic<unsigned> next[1];
    next[0] = 0;
    REQUIRE(pf::launch(record_thread_order, config({1}, {threads}), order.data(), next) == status::success);
    return order;
  };
  using dsconv::host::schedule;
  std::vector<unsigned> ascending(threads), descending(threads), warp_descending;
  for (unsigned t = 0; t < threads; ++t) ascending[t] = t, descending[t] = threads - 1 - t;
  for (unsigned w = threads / 32; w-- > 0;)
    for (unsigned l = 0; l < 32; ++l) warp_descending.push_back(w * 32 + l);
  CHECK(order_of(schedule::ascending) == ascending);
  CHECK(order_of(schedule::descending) == descending);
  CHECK(order_of(schedule::warp_descending) == warp_descending);
  const std::vector<unsigned> shuffled = order_of(schedule::shuffle);
  CHECK(shuffled != ascending);
  CHECK(std::is_permutation(shuffled.begin(), shuffled.end(), ascending.begin()));
  CHECK(order_of(schedule::shuffle) != shuffled);  // each launch (and block) shuffles anew
  const std::vector<unsigned> warps = order_of(schedule::warp_shuffle);
  CHECK(std::is_permutation(warps.begin(), warps.end(), ascending.begin()));
  for (unsigned i = 0; i < threads; ++i) CHECK(warps[i] % 32 == i % 32);  // whole warps, lanes in order
  dsconv::host::schedule parsed;
  CHECK(dsconv::host::parse_schedule("warp-shuffle", parsed));
  CHECK(parsed == schedule::warp_shuffle);
  CHECK_FALSE(dsconv::host::parse_schedule("sideways", parsed));
}

TEST_CASE("static shared memory is poisoned at every block start, never left from another block", "[emulator]") {
  settings_guard restore;
  REQUIRE(dsconv::host::set_worker_count(1) == status::success);  // block 0 runs right before block 1
  const unsigned blocks = 4;
  std::vector<float> out(blocks * 64, 0.f);
  REQUIRE(pf::launch(read_what_another_block_wrote, config({blocks}, {64}), out.data()) == status::success);
  for (unsigned i = 0; i < out.size(); ++i) {
    INFO("block " << i / 64 << ", thread " << i % 64);
    if (i < 64)
      CHECK(out[i] == 1.0f);
    else
      CHECK(std::isnan(out[i]));
  }
}

TEST_CASE("threads waiting at two different barriers are divergence", "[emulator]") {
  std::vector<int> out(64, 0);
  REQUIRE(pf::launch(barriers_at_two_call_sites, config({1}, {64}, "two_barriers"), out.data()) ==
          status::barrier_divergence);
  const std::string detail = dsconv::last_error_detail();
  INFO(detail);
  CHECK(detail.find("two_barriers") != std::string::npos);
  CHECK(detail.find("different barriers") != std::string::npos);
  for (int v : out) CHECK(v == 0);  // nobody passed either barrier
}

TEST_CASE("device profiles: the planners see the chosen GPU, launches are held to its limits", "[emulator][device]") {
  settings_guard restore;
  for (const pf::device_properties& p : dsconv::host::device_profiles()) {
    INFO(p.name);
    REQUIRE(dsconv::host::set_device(p.name) == status::success);
    const pf::device_properties d = dsconv::host::device();
    CHECK(std::string(d.name) == p.name);
    CHECK(d.warp_size == (std::string(p.name).rfind("gfx", 0) == 0 ? 64 : 32));
    CHECK(dsconv::host::warp_size() == d.warp_size);
    CHECK(d.multiprocessor_count > 1);
    CHECK(d.shared_memory_per_multiprocessor >= d.shared_memory_per_block);
  }
  const auto unit_of = [](const char* name) {
    REQUIRE(dsconv::host::set_device(name) == status::success);
    return dsconv::host::device().matrix;
  };
  CHECK(unit_of("sm80") == pf::matrix_unit::mma_sync);
  CHECK(unit_of("sm90") == pf::matrix_unit::mma_sync);
  CHECK(unit_of("sm75") == pf::matrix_unit::mma_sync_f16);
  CHECK(unit_of("gfx906") == pf::matrix_unit::none);
  CHECK(unit_of("gfx90a") == pf::matrix_unit::mfma);
  // At another warp width the emulated matrix unit is gone.
  REQUIRE(dsconv::host::set_warp_size(32) == status::success);
  CHECK(dsconv::host::device().matrix == pf::matrix_unit::none);
  CHECK(dsconv::host::set_device("sm100x") == status::invalid_size);
  pf::device_properties custom = dsconv::host::device();
  custom.multiprocessor_count = 0;
  CHECK(dsconv::host::set_device(custom) == status::invalid_size);

  // 64 KiB of shared memory per block: refused on NVIDIA, as on the GPU, allowed on AMD.
  std::vector<float> out(64, 0.f);
  REQUIRE(dsconv::host::set_device("sm80") == status::success);
  CHECK(pf::launch(noop, config({1}, {32}, "dynamic", 64 * 1024), static_cast<int*>(nullptr)) ==
        status::invalid_launch_config);
  CHECK(pf::launch(large_static_shared, config({1}, {64}, "static"), out.data()) == status::kernel_fault);
  CHECK(std::string(dsconv::last_error_detail()).find("exceed") != std::string::npos);
  REQUIRE(dsconv::host::set_device("gfx906") == status::success);
  CHECK(pf::launch(noop, config({1}, {32}, "dynamic", 64 * 1024), static_cast<int*>(nullptr)) == status::success);
  REQUIRE(pf::launch(large_static_shared, config({1}, {64}), out.data()) == status::success);
  for (float v : out) CHECK(v == 2.0f);
}

TEST_CASE("blocks are handed out in the chosen order, each exactly once", "[emulator]") {
  settings_guard restore;
  REQUIRE(dsconv::host::set_worker_count(1) == status::success);
  const unsigned blocks = 50;
  const auto order_of = [&](dsconv::host::block_order o) {
    dsconv::host::set_block_order(o);
    std::vector<unsigned> order(blocks, ~0u);
    std::atomic<unsigned> next{0};
    REQUIRE(pf::launch(record_block_order, config({blocks}, {32}), order.data(), &next) == status::success);
    return order;
  };
  std::vector<unsigned> ascending(blocks), descending(blocks);
  for (unsigned b = 0; b < blocks; ++b) ascending[b] = b, descending[b] = blocks - 1 - b;
  CHECK(order_of(dsconv::host::block_order::ascending) == ascending);
  CHECK(order_of(dsconv::host::block_order::descending) == descending);
  const std::vector<unsigned> shuffled = order_of(dsconv::host::block_order::shuffle);
  CHECK(shuffled != ascending);
  CHECK(std::is_permutation(shuffled.begin(), shuffled.end(), ascending.begin()));
}

TEST_CASE("the bank model counts the wavefronts of each warp-wide shared-memory access", "[emulator][traffic]") {
  const unsigned ws = static_cast<unsigned>(dsconv::host::warp_size()), threads = 128, warps = threads / ws;
  std::vector<float> out(threads);
  // One request per warp; `phases` phases of 128 bytes' worth of lanes each, `per_phase`
  // wavefronts each.
  const auto expect = [&](auto kernel, unsigned stride, unsigned lanes_per_phase, unsigned per_phase) {
    INFO("stride " << stride << ", warp " << ws);
    dsconv::host::traffic_recorder rec;
    REQUIRE(pf::launch(kernel, config({1}, {threads}), out.data(), stride) == status::success);
    const dsconv::host::bank_counters loads = rec.total().shared_loads;
    const unsigned phases = (ws + lanes_per_phase - 1) / lanes_per_phase;
    CHECK(loads.requests == warps);
    CHECK(loads.ideal == warps * phases);
    CHECK(loads.wavefronts == warps * phases * per_phase);
    // The same per call site: the kernel's one load site holds all of them, and names itself
    // as the worst where it has conflicts.
    const dsconv::host::traffic_counters total = rec.total();
    unsigned load_sites = 0;
    for (const auto& site : total.shared_sites.sites)
      if (!site.store) {
        ++load_sites;
        CHECK(site.counts.wavefronts == loads.wavefronts);
        CHECK(site.counts.ideal == loads.ideal);
        CHECK(site.site.line > 0);
      }
    CHECK(load_sites == 1);
    const dsconv::host::site_bank_counters* worst = total.shared_sites.worst(false);
    CHECK((worst != nullptr) == (per_phase > 1));
    return loads.conflict_factor();
  };
  using vec4 = pf::vec<float, 4>;
  CHECK(expect(strided_shared_read<float>, 1, 32, 1) == 1.0);     // consecutive words: every bank once
  CHECK(expect(strided_shared_read<float>, 2, 32, 2) == 2.0);     // every other word: two words a bank
  CHECK(expect(strided_shared_read<float>, 32, 32, 32) == 32.0);  // one bank for all
  CHECK(expect(strided_shared_read<float>, 0, 32, 1) == 1.0);     // one word for all: a broadcast
  CHECK(expect(strided_shared_read<float>, 33, 32, 1) == 1.0);    // padded rows: conflict-free
  CHECK(expect(strided_shared_read<vec4>, 1, 8, 1) == 1.0);       // 16-byte accesses: 8 lanes a phase
  CHECK(expect(strided_shared_read<vec4>, 2, 8, 2) == 2.0);
  CHECK(expect(strided_shared_read<dsconv::half>, 1, 32, 1) == 1.0);  // two lanes a word
  CHECK(expect(strided_shared_read<dsconv::half>, 24, 32, 4) == 4.0);  // 48-byte rows: lanes 4 apart share a bank
  // The stores that filled the table: 1024 / 128 per thread, each warp-wide and conflict-free.
  dsconv::host::traffic_recorder rec;
  REQUIRE(pf::launch(strided_shared_read<float>, config({1}, {threads}), out.data(), 1u) == status::success);
  CHECK(rec.total().shared_stores.requests == warps * 1024 / threads);
  CHECK(rec.total().shared_stores.conflict_factor() == 1.0);
}

TEST_CASE("lanes idle in some iterations of a marked loop join only the requests of the others", "[emulator][traffic]") {
  // Matched by occurrence alone, the even lanes' k-th access (iteration 2k) and the odd lanes'
  // (iteration 2k + 1) would be one request: half as many requests, each of two iterations'
  // sectors, and shared words of two iterations meeting in each bank (factor 2).
  const unsigned ws = static_cast<unsigned>(dsconv::host::warp_size()), threads = 128, warps = threads / ws;
  const unsigned iterations = 4;
  dsconv::device_buffer<float> in, out;
  REQUIRE(in.allocate(iterations * threads) == status::success);
  REQUIRE(out.allocate(iterations * threads) == status::success);
  dsconv::host::traffic_recorder rec;
  REQUIRE(pf::launch(alternate_idle_lanes, config({1}, {threads}, "idle_lanes", 32 * iterations * sizeof(float)),
                     in.data(), out.data()) == status::success);
  const dsconv::host::traffic_counters t = rec.total();
  CHECK(t.load_requests == warps * iterations);
  CHECK(t.load_sectors == warps * iterations * (ws * 4 / 32));  // a warp's span of floats, half its lanes
  CHECK(t.store_requests == warps * iterations);
  CHECK(t.shared_stores.requests == warps * iterations);
  CHECK(t.shared_stores.conflict_factor() == 1.0);
}

TEST_CASE("the build uses the context switch it was configured for", "[emulator]") {
#if defined(DSCONV_HOST_FIBER_UCONTEXT)
  CHECK(std::string(dsconv::host::context_switch_kind()) == "ucontext");
#else
  CHECK(std::string(dsconv::host::context_switch_kind()) == "assembly");
#endif
}

#endif  // DSCONV_PLATFORM_HOST
