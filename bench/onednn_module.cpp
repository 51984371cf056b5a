// oneDNN's int8 matmul, the baseline of the QuantizedLinearMatMul benchmarks, as the module
// libhetkern_onednn (bench/onednn_module.hpp).
#include "bench/onednn_module.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

namespace hk::bench {
namespace {

dnnl::memory::data_type onednn_type(DataType t) {
  return t == DataType::uint8 ? dnnl::memory::data_type::u8 : dnnl::memory::data_type::s8;
}

dnnl::cpu_isa onednn_isa(Isa level) {
  switch (level) {
    case Isa::portable: return dnnl::cpu_isa::sse41;  // oneDNN's lowest level
    case Isa::avx2: return dnnl::cpu_isa::avx2;
    case Isa::avx512: return dnnl::cpu_isa::avx512_core;
    case Isa::avx512_vnni: return dnnl::cpu_isa::avx512_core_vnni;
    case Isa::amx: return dnnl::cpu_isa::avx512_core_amx;
  }
  return dnnl::cpu_isa::all;
}

const char* name_of(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: return "all";
  }
  return "unknown";
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string cap_isa(Isa level) {
  dnnl::set_max_cpu_isa(onednn_isa(level));  // refused once kernels exist; the result says so
  return name_of(dnnl::get_effective_cpu_isa());
}

class Kernel final : public OnednnKernel {
 public:
  std::string implementation() const override { return pd.impl_info_str(); }

  void pack_weights() override {
    dnnl::memory& weights = args.at(DNNL_ARG_WEIGHTS);
    dnnl::reorder(b_user, weights).execute(stream, b_user, weights);
    stream.wait();
  }

  void run() override {
    primitive.execute(stream, args);
    stream.wait();
  }

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  std::unordered_map<int, dnnl::memory> args;
  dnnl::memory b_user;  // B as the caller holds it
};

std::unique_ptr<OnednnKernel> make(const OnednnQmmProblem& p, std::string& reason) {
  using tag = dnnl::memory::format_tag;
  std::unique_ptr<Kernel> k;
  // Inside the try: a oneDNN that cannot even make its CPU engine is a missing baseline too.
  try {
    k = std::make_unique<Kernel>();
    const dnnl::memory::desc a_md({p.m, p.k}, onednn_type(p.a_type), tag::ab);
    const tag b_tag = p.b_columns ? tag::ba : tag::ab;
    const dnnl::memory::desc b_md({p.k, p.n}, onednn_type(p.b_type), b_tag);
    const dnnl::memory::desc b_kernel_md({p.k, p.n}, onednn_type(p.b_type), p.packed_weights ? tag::any : b_tag);
    const dnnl::memory::desc out_md({p.m, p.n}, onednn_type(p.out_type), tag::ab);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {p.multiplier});
    if (p.a_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {p.a_zero_point});
    if (p.b_zero_point != 0) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {p.b_zero_point});
    if (p.out_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {p.out_zero_point});
    k->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_kernel_md, out_md), attr, k->engine);
    k->primitive = dnnl::matmul(k->pd);
    k->b_user = dnnl::memory(b_md, k->engine, const_cast<void*>(p.b));
    const dnnl::memory weights = p.packed_weights ? dnnl::memory(k->pd.weights_desc(), k->engine) : k->b_user;
    k->args = {{DNNL_ARG_SRC, dnnl::memory(a_md, k->engine, const_cast<void*>(p.a))},
               {DNNL_ARG_WEIGHTS, weights},
               {DNNL_ARG_DST, dnnl::memory(out_md, k->engine, p.out)}};
  } catch (const dnnl::error& e) {
    if (!k) {
      reason = "oneDNN " + version() + " cannot make a CPU engine (" + e.what() + ")";
      return nullptr;
    }
    reason = "oneDNN " + version() + " has no matmul for A " + std::string(hk::name_of(p.a_type)) + " x B " +
             std::string(hk::name_of(p.b_type)) + " -> " + std::string(hk::name_of(p.out_type)) + " (" +
             e.what() + ")";
    return nullptr;
  }
  return k;
}

}  // namespace
}  // namespace hk::bench

extern "C" __attribute__((visibility("default"))) const hk::bench::OnednnTable* hetkern_onednn_table() {
  static const hk::bench::OnednnTable table{hk::bench::make, hk::bench::cap_isa, hk::bench::version};
  return &table;
}
