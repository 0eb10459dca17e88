#pragma once
// What the benchmark measures about the device once, at start-up.

#include <cstddef>
#include <string>

namespace dsconv_bench {

struct device_facts {
  std::string description;
  std::size_t l2_bytes = 0;  // 0 where there is no cache to defeat (the host platform)
  double copy_gbps = 0;      // device-to-device copy bandwidth (read + write); 0 where not measured
};

}  // namespace dsconv_bench
