#pragma once
// Which kernels this program contains, and which of them ran where. Every kernel a launcher
// names through platform::registered<Kernel>() enters the registry when the program starts
// (a static initialiser of the instantiation), whether or not it ever runs; every launch of a
// registered kernel records the warp width, the device profile and the thread schedules it
// ran under. A test suite can then prove that each compiled kernel was executed
// (host::compiled_kernels, host::kernel_runs).

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../launch_types.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

struct compiled_kernel {
  std::string name;   // e.g. "kernels::depthwise_nchw_tiled<float, 3, 1>"
  matrix_unit needs;  // the matrix unit its instructions need (none: runs on any device)
  int lanes;          // the warp width of the one vendor whose GPU builds compile it (0: both)
};

struct kernel_run {
  std::string kernel;
  int warp_size;
  std::string device;      // the device profile's name
  unsigned schedules;      // bit i: fixed_schedules[i] ran some block of it
  unsigned long long launches;
};

class kernel_registry {
 public:
  int add(const void* address, std::string name, matrix_unit needs, int lanes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(address);
    if (it != index_.end()) return static_cast<int>(it->second);
    // clang names a specialisation without its template arguments: number the repeats (in
    // registration order, which is the same in every run of a program).
    int repeats = 0;
    for (const auto& k : kernels_) repeats += k.name.compare(0, name.size(), name) == 0 &&
                                              (k.name.size() == name.size() || k.name[name.size()] == ' ');
    if (repeats) name += " #" + std::to_string(repeats + 1);
    index_.emplace(address, kernels_.size());
    kernels_.push_back(compiled_kernel{std::move(name), needs, lanes});
    return static_cast<int>(kernels_.size() - 1);
  }

  // Records a launch of the kernel at `address` (ignored unless registered).
  void ran(const void* address, int warp_size, const char* device, unsigned schedules) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(address);
    if (it == index_.end()) return;
    run_totals& r = runs_[std::make_tuple(it->second, warp_size, std::string(device))];
    r.schedules |= schedules;
    ++r.launches;
  }

  // The registered name of the kernel at `address`; empty if it is not registered.
  std::string name_of(const void* address) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(address);
    return it == index_.end() ? std::string() : kernels_[it->second].name;
  }

  std::vector<compiled_kernel> kernels() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernels_;
  }

  std::vector<kernel_run> runs() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<kernel_run> out;
    for (const auto& r : runs_)
      out.push_back(kernel_run{kernels_[std::get<0>(r.first)].name, std::get<1>(r.first), std::get<2>(r.first),
                               r.second.schedules, r.second.launches});
    return out;
  }

 private:
  struct run_totals {
    unsigned schedules = 0;
    unsigned long long launches = 0;
  };
  std::mutex mutex_;
  std::vector<compiled_kernel> kernels_;
  std::unordered_map<const void*, std::size_t> index_;
  std::map<std::tuple<std::size_t, int, std::string>, run_totals> runs_;
};

inline kernel_registry& registry() {
  static kernel_registry r;
  return r;
}

// The kernel's name from the compiler's signature of this function, e.g. "... [with auto
// Kernel = dsconv::kernels::direct<float>]" (GCC) or "[Kernel = &dsconv::kernels::...]"
// (clang), without the namespace dsconv:: and the &.
template <auto Kernel>
std::string kernel_name() {
  std::string s = __PRETTY_FUNCTION__;
  const std::size_t at = s.find("Kernel = ");
  s = at == std::string::npos ? s : s.substr(at + 9);
  s = s.substr(0, s.find(';'));  // GCC goes on with "; std::string = ..."
  if (!s.empty() && s.back() == ']') s.pop_back();
  if (!s.empty() && s.front() == '&') s.erase(0, 1);
  for (std::size_t p; (p = s.find("dsconv::")) != std::string::npos;) s.erase(p, 8);
  return s;
}

template <auto Kernel, matrix_unit Needs, int Lanes>
struct kernel_registration {
  static const int id;
};
template <auto Kernel, matrix_unit Needs, int Lanes>
const int kernel_registration<Kernel, Needs, Lanes>::id =
    registry().add(reinterpret_cast<const void*>(Kernel), kernel_name<Kernel>(), Needs, Lanes);

}  // namespace host_detail

// `Kernel` itself; naming it here enters it in the registry at program start. Needs: the
// matrix unit its instructions need; Lanes: the warp width of the one vendor whose GPU builds
// compile it (0: both vendors').
template <auto Kernel, matrix_unit Needs = matrix_unit::none, int Lanes = 0>
inline auto registered() {
  (void)host_detail::kernel_registration<Kernel, Needs, Lanes>::id;
  return Kernel;
}

}  // namespace platform
}  // namespace dsconv
