#pragma once
// An owned handle of a C library with create/destroy functions (cuDNN and MIOpen
// descriptors): destroyed with its owner, null when creation failed.

template <class Handle, class Status, Status Success, Status (*Create)(Handle*), Status (*Destroy)(Handle)>
class owned_handle {
 public:
  owned_handle() {
    if (Create(&h_) != Success) h_ = nullptr;
  }
  owned_handle(const owned_handle&) = delete;
  owned_handle& operator=(const owned_handle&) = delete;
  ~owned_handle() {
    if (h_) Destroy(h_);
  }
  Handle get() const { return h_; }

 private:
  Handle h_ = nullptr;
};
