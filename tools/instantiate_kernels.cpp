// Instantiates every kernel of the library (all entry points for all element types), so a
// compiler's resource report covers each one. Compiled, never run, by
// scripts/kernel_resources.py.
#include <dsconv/dsconv.hpp>

template <class T>
void instantiate() {
  dsconv::depthwise_params dp;
  dsconv::pointwise_params pp;
  (void)dsconv::depthwise_forward<T>(dp, nullptr, nullptr, nullptr, nullptr);
  (void)dsconv::pointwise_forward<T>(pp, nullptr, nullptr, nullptr, nullptr, nullptr);
}

int main() {
  instantiate<float>();
  instantiate<dsconv::half>();
  instantiate<dsconv::bfloat16>();
  return 0;
}
