#pragma once
// The text behind the last platform failure of the calling thread: to_string(status) names
// the kind of failure, this says what exactly happened (the runtime's message, which block
// diverged, what a kernel threw).

#include <string>

#include "../status.hpp"

namespace dsconv {
namespace platform {
inline std::string& error_detail_slot() {
  thread_local std::string detail;
  return detail;
}

// Records `detail` for the calling thread and passes `s` through, so a failure path reads
// `return fail(status::..., text);`.
inline status fail(status s, std::string detail) {
  error_detail_slot() = std::move(detail);
  return s;
}
}  // namespace platform

// Details of the last failure reported to this thread by a platform call; empty if none.
inline const char* last_error_detail() noexcept { return platform::error_detail_slot().c_str(); }

}  // namespace dsconv
