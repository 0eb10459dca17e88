#pragma once
// device_buffer<T>: an owning buffer of device memory (ordinary memory on the host
// platform), for examples, tests and benchmarks that must run on every platform.

#include <cstddef>
#include <utility>
#include <vector>

#include "platform/platform.hpp"
#include "status.hpp"

namespace dsconv {

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~device_buffer() { platform::device_free(ptr_); }

  // Allocates `count` elements (contents undefined), releasing what was held before.
  status allocate(std::size_t count) {
    platform::device_free(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) return platform::fail(status::size_overflow, "device_buffer: element count");
    void* p = nullptr;
    const status s = platform::device_malloc(&p, count * sizeof(T));
    if (s != status::success) return s;
    ptr_ = static_cast<T*>(p);
    size_ = count;
    return status::success;
  }

  // Allocates host.size() elements and copies `host` into them.
  status upload(const std::vector<T>& host) {
    status s = allocate(host.size());
    if (s == status::success) s = platform::copy_to_device(ptr_, host.data(), host.size() * sizeof(T));
    return s;
  }

  // Copies the whole buffer into `host` (resized to fit); waits for queued work first.
  status download(std::vector<T>& host) const {
    host.resize(size_);
    return platform::copy_to_host(host.data(), ptr_, size_ * sizeof(T));
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dsconv
