// What the planners launch for every depthwise and 1x1 layer of MobileNetV2 and
// EfficientNet-B0 on each device profile, without running it (host platform, plan-only
// launches) of each pass (forward, backward data, backward weight), and for every block of both
// networks each variant of the block's forward that runs it (pass "forward", kind "block"): one
// CSV row per launch on stdout, with the profile's limits and the bytes of the activation tensors
// the pass reads, from which scripts/kernel_resources.py computes each launch's occupancy and
// bytes in flight with the kernel's compiled registers, static shared memory and SASS.
//
// Options: --device sm75,sm80,sm90,gfx906,gfx90a  --batch 1,8,32,128  --type float,half,bfloat16
// --layout nchw,nhwc  --pass forward,data,weight
#include <cstdio>
#include <stdexcept>
#include <string>

#include "support/blocks.hpp"
#include "support/layers.hpp"
#include "support/options.hpp"

namespace {

// Buffers that stand for a layer's tensors, each as large as the largest tensor of both
// networks at batch 128 (the dispatcher checks that they do not overlap). Plan-only launches
// read and write none of them, so their pages are never touched.
struct stand_ins {
  static constexpr std::size_t floats = std::size_t(1) << 28;  // 1 GiB: 128 x 96 x 112 x 112 floats is 616 MB
  dsconv::device_buffer<float> input, weight, bias, residual, output, workspace;
  stand_ins() {
    for (auto* b : {&input, &weight, &bias, &residual, &output})
      if (b->allocate(floats) != dsconv::status::success) throw std::runtime_error("allocation failed");
    // The unfused blocks' workspace holds two expanded tensors: 1.2 GB at batch 128.
    if (workspace.allocate(2 * floats) != dsconv::status::success) throw std::runtime_error("allocation failed");
  }
};

template <class T>
dsconv::status plan(const dsconv_bench::layer& l, dsconv_bench::layer_pass pass, int batch, dsconv::layout lay,
                    stand_ins& b) {
  using dsconv_bench::layer_pass;
  const auto as = [](dsconv::device_buffer<float>& buf) { return reinterpret_cast<T*>(buf.data()); };
  // The workspace each call may use, so that the heuristics choose as they would for a user.
  void* workspace = b.workspace.data();
  if (l.depthwise()) {
    const dsconv::depthwise_params p = l.depthwise_params(batch, lay);
    dsconv::depthwise_backward_options options;
    // (what the forward saved, read where the layer fuses an activation: the output of relu and
    // relu6, act'(z) of the others, as the PyTorch package saves them)
    (dsconv::detail::gradient_from_output(p.act) ? options.activation_saved : options.activation_derivative) =
        as(b.residual);
    switch (pass) {
      case layer_pass::backward_data:
        return dsconv::depthwise_backward_data(p, options, as(b.output), as(b.weight), as(b.input));
      case layer_pass::backward_weight:
        options.workspace_bytes = dsconv::depthwise_backward_weight_workspace_size<T>(p);
        options.workspace = workspace;
        return dsconv::depthwise_backward_weight(p, options, as(b.input), as(b.output), as(b.weight), as(b.bias));
      default:
        return dsconv::depthwise_forward(p, as(b.input), as(b.weight), as(b.bias), as(b.output));
    }
  }
  const dsconv::pointwise_params p = l.pointwise_params(batch, lay);
  dsconv::pointwise_backward_options backward;
  (dsconv::detail::gradient_from_output(p.act) ? backward.activation_saved : backward.activation_derivative) =
      as(b.residual);
  switch (pass) {
    case layer_pass::backward_data:
      backward.workspace_bytes = dsconv::pointwise_backward_data_workspace_size<T>(p);
      backward.workspace = workspace;
      return dsconv::pointwise_backward_data(p, backward, as(b.output), as(b.weight), as(b.input));
    case layer_pass::backward_weight:
      backward.workspace_bytes = dsconv::pointwise_backward_weight_workspace_size<T>(p);
      backward.workspace = workspace;
      return dsconv::pointwise_backward_weight(p, backward, as(b.input), as(b.output), as(b.weight), as(b.bias));
    default: {
      dsconv::pointwise_options options;
      options.workspace_bytes = dsconv::pointwise_workspace_size<T>(p);
      options.workspace = workspace;
      return dsconv::pointwise_forward(p, options, as(b.input), as(b.weight), as(b.bias),
                                       l.residual ? as(b.residual) : nullptr, as(b.output));
    }
  }
}
// The bytes of the activation tensors a layer's pass reads, once each (not its weights): the
// input (forward), grad_output (data), both (weight), and the saved tensor where an activation
// gates the gradient: what all of the pass's loads can at most keep in flight at once.
long long read_bytes(const dsconv_bench::layer& l, dsconv_bench::layer_pass pass, int batch, std::size_t element) {
  using dsconv_bench::layer_pass;
  const long long in = static_cast<long long>(batch) * l.h_in * l.h_in * l.cin;
  const long long out = static_cast<long long>(batch) * l.h_out * l.h_out * l.cout;
  const long long gradient = out * (l.act == dsconv::activation::none ? 1 : 2);
  const long long elements = pass == layer_pass::backward_data     ? gradient
                             : pass == layer_pass::backward_weight ? in + gradient
                                                                   : in + (l.residual ? out : 0);
  return elements * static_cast<long long>(element);
}

std::size_t element_bytes(const std::string& type) { return type == "float" ? 4 : 2; }

// One CSV row per launch `recorder` saw.
void print_launches(const dsconv::host::traffic_recorder& recorder, const std::string& device,
                    const dsconv::platform::device_properties& d, const std::string& layer, const std::string& kind,
                    const std::string& pass, const std::string& type, const std::string& layout, int batch,
                    long long read) {
  for (const auto& launch : recorder.launches())
    std::printf("%s,%d,%d,%d,%d,%zu,%zu,%s,%s,%s,%s,%s,%d,\"%s\",%llu,%u,%zu,%lld\n", device.c_str(), d.warp_size,
                d.multiprocessor_count, d.max_threads_per_multiprocessor, d.registers_per_multiprocessor,
                d.shared_memory_per_multiprocessor, d.shared_memory_reserved_per_block, layer.c_str(), kind.c_str(),
                pass.c_str(), type.c_str(), layout.c_str(), batch, launch.kernel.c_str(),
                static_cast<unsigned long long>(launch.grid.x) * launch.grid.y * launch.grid.z,
                launch.block.x * launch.block.y * launch.block.z, launch.shared_bytes, read);
}

// Each variant of the block's forward that can run `p` (unfused, with its workspace, and fused).
template <class T>
dsconv::status plan_block(const dsconv::inverted_residual_params& p, stand_ins& b) {
  const auto as = [](dsconv::device_buffer<float>& buf) { return reinterpret_cast<T*>(buf.data()); };
  const T* w = as(b.weight);
  // (every weight from one stand-in: plan-only launches read none of them)
  const dsconv::inverted_residual_weights<T> weights{w, w, w, w, w, w, w, w, w, w};
  for (const dsconv::block_variant v : dsconv::all_block_variants) {
    if (v == dsconv::block_variant::automatic || dsconv::can_implement<T>(v, p) != dsconv::status::success) continue;
    dsconv::inverted_residual_options options;
    options.variant = v;
    options.workspace = b.workspace.data();
    options.workspace_bytes = dsconv::inverted_residual_workspace_size<T>(p);
    const dsconv::status s = dsconv::inverted_residual_forward(p, options, weights, as(b.input), as(b.output));
    if (s != dsconv::status::success) return s;
  }
  return dsconv::status::success;
}
}  // namespace

int main(int argc, char** argv) {
  using dsconv_bench::options;
  const options opt(argc, argv);
  dsconv::host::set_plan_only(true);
  stand_ins buffers;
  std::printf("device,warp_size,multiprocessors,max_threads_per_multiprocessor,registers_per_multiprocessor,"
              "shared_per_multiprocessor,shared_reserved_per_block,layer,kind,pass,type,layout,batch,kernel,grid_blocks,"
              "block_threads,dynamic_shared_bytes,read_bytes\n");
  for (const std::string& device : options::split(opt.get("device", nullptr, "sm75,sm80,sm90,gfx906,gfx90a"))) {
    if (dsconv::host::set_device(device.c_str()) != dsconv::status::success) {
      std::fprintf(stderr, "unknown device profile %s\n", device.c_str());
      return 2;
    }
    const dsconv::platform::device_properties d = dsconv::host::device();
    for (const auto& l : dsconv_bench::all_layers())
      for (const std::string& batch : options::split(opt.get("batch", nullptr, "1,8,32,128")))
        for (const std::string& type : options::split(opt.get("type", nullptr, "float,half,bfloat16")))
          for (const std::string& layout : options::split(opt.get("layout", nullptr, "nchw,nhwc")))
            for (const std::string& pass_name : options::split(opt.get("pass", nullptr, "forward,data,weight"))) {
            const dsconv::layout lay = layout == "nhwc" ? dsconv::layout::nhwc : dsconv::layout::nchw;
            const dsconv_bench::layer_pass pass = pass_name == "data"     ? dsconv_bench::layer_pass::backward_data
                                                  : pass_name == "weight" ? dsconv_bench::layer_pass::backward_weight
                                                                          : dsconv_bench::layer_pass::forward;
            dsconv::host::traffic_recorder recorder;
            const int n = std::stoi(batch);
            const dsconv::status s = type == "half"       ? plan<dsconv::half>(l, pass, n, lay, buffers)
                                     : type == "bfloat16" ? plan<dsconv::bfloat16>(l, pass, n, lay, buffers)
                                                          : plan<float>(l, pass, n, lay, buffers);
            if (s != dsconv::status::success) {
              std::fprintf(stderr, "%s %s %s batch %d %s %s: %s\n", device.c_str(), l.name().c_str(), pass_name.c_str(), n,
                           type.c_str(), layout.c_str(), dsconv::last_error_detail());
              return 1;
            }
            print_launches(recorder, device, d, l.name(), l.kind, pass_name, type, layout, n,
                           read_bytes(l, pass, n, element_bytes(type)));
          }
    // The blocks' forward (both layouts: the unfused sequence runs either; the fused kernel NHWC).
    for (const auto& blk : dsconv_bench::all_blocks())
      for (const std::string& batch : options::split(opt.get("batch", nullptr, "1,8,32,128")))
        for (const std::string& type : options::split(opt.get("type", nullptr, "float,half,bfloat16")))
          for (const std::string& layout : options::split(opt.get("layout", nullptr, "nchw,nhwc"))) {
            const dsconv::inverted_residual_params p =
                blk.at(std::stoi(batch), layout == "nhwc" ? dsconv::layout::nhwc : dsconv::layout::nchw);
            dsconv::host::traffic_recorder recorder;
            const dsconv::status s = type == "half"       ? plan_block<dsconv::half>(p, buffers)
                                     : type == "bfloat16" ? plan_block<dsconv::bfloat16>(p, buffers)
                                                          : plan_block<float>(p, buffers);
            if (s != dsconv::status::success) {
              std::fprintf(stderr, "%s %s batch %s %s %s: %s\n", device.c_str(), blk.name().c_str(), batch.c_str(),
                           type.c_str(), layout.c_str(), dsconv::last_error_detail());
              return 1;
            }
            print_launches(recorder, device, d, blk.name(), "block", "forward", type, layout, std::stoi(batch),
                           static_cast<long long>(p.n) * p.h * p.w * p.c_in * static_cast<long long>(element_bytes(type)));
          }
  }
  return 0;
}
