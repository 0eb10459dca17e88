#pragma once
// The host platform's stream handle. A launch finishes before it returns, so a stream is
// only a name here: no object stands behind it.

namespace dsconv {
namespace platform {
struct host_stream;
using stream_t = host_stream*;
}  // namespace platform
}  // namespace dsconv
