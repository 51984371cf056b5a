// The GPU plugin's side: the table of the functions in HETKERN_GPU_FUNCTIONS, as this plugin
// defines them (its symbols are hidden, so these are its own definitions, never libhetkern's
// forwarders).
#include <new>
#include <utility>

#include "runtime/api/gpu_plugin.hpp"

#define HETKERN_GPU_FILL_F(field, R, name, params, args, need, ...) t.field = &name;
#define HETKERN_GPU_FILL_M(field, Class, R, name, params, args, quals, need, ...) t.field = &Class::name;
#define HETKERN_GPU_FILL_C(field, Class, Name, params, args, quals, need) \
  t.field = [] HETKERN_GPU_WITH_SELF(Class* self, params) { new (self) Class args; };
#define HETKERN_GPU_FILL_D(field, Class, Name) t.field = [](Class* self) { self->~Name(); };

extern "C" __attribute__((visibility("default"))) const hk::detail::GpuPluginTable* hetkern_gpu_plugin() {
  static const hk::detail::GpuPluginTable table = [] {
    hk::detail::GpuPluginTable t{};
    t.abi = hk::detail::gpu_plugin_abi;
    t.size = sizeof(t);
    t.version = HETKERN_VERSION;
    HETKERN_GPU_FUNCTIONS(HETKERN_GPU_FILL_F, HETKERN_GPU_FILL_M, HETKERN_GPU_FILL_C, HETKERN_GPU_FILL_D)
    return t;
  }();
  return &table;
}
