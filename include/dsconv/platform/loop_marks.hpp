#pragma once
// Marks of a loop that walks a thread's share of elements (detail::for_each_strided): on the
// host platform each iteration starts a context of its own for the traffic and bank models,
// so that a lane whose body idles in some iterations joins only the requests of the
// iterations it works in, as on a GPU (host/access_context.hpp). Nothing on a GPU.
//
//   DSCONV_LOOP_MARKS(marks);          // once, before the loop (in a function taking
//   for (...) { marks.iteration(); }   // DSCONV_CALL_SITE: the loop's identity)

#include "../config.hpp"
#include "memory_access.hpp"

namespace dsconv {
namespace platform {

#if defined(DSCONV_PLATFORM_HOST)
class loop_marks {
 public:
  loop_marks(const char* file, unsigned line) : on_(host_detail::traffic_enabled()) {
    if (on_) host_detail::loop_begin(file, line);
  }
  ~loop_marks() {
    if (on_) host_detail::loop_end();
  }
  loop_marks(const loop_marks&) = delete;
  loop_marks& operator=(const loop_marks&) = delete;
  void iteration() const {
    if (on_) host_detail::loop_iteration();
  }

 private:
  bool on_;  // (decided once: a recorder that appears mid-loop must not see half a loop)
};
#define DSCONV_LOOP_MARKS(name) const ::dsconv::platform::loop_marks name(site_file, site_line)
#else
struct loop_marks {
  DSCONV_DEVICE DSCONV_FORCEINLINE loop_marks() {}
  DSCONV_DEVICE DSCONV_FORCEINLINE void iteration() const {}
};
#define DSCONV_LOOP_MARKS(name) const ::dsconv::platform::loop_marks name
#endif

}  // namespace platform
}  // namespace dsconv
