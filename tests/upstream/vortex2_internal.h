/*
 * vortex2_internal.h - the declarations upstream Vortex's runtime module
 * loader (sw/runtime/common/module.cpp) compiles against, for testing
 * images with that file unmodified: upstream's own header of this name is
 * not among the stored upstream files.  Module and Kernel have exactly
 * the members module.cpp uses; Device and Buffer are the least a load
 * needs (device memory is not modelled: writes are counted, not kept).
 */
#ifndef VXT_VORTEX2_INTERNAL_H
#define VXT_VORTEX2_INTERNAL_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <vortex2.h>

#define VX_C_ENTRY_TRY try {
#define VX_C_ENTRY_CATCH                                                                                     \
  }                                                                                                          \
  catch (...) {                                                                                              \
    return VX_ERR_INVALID_VALUE;                                                                             \
  }

namespace vx {

template <typename T> class RefCounted {
public:
  void retain() { refs_++; }
  void release() {
    if (--refs_ == 0) delete static_cast<T *>(this);
  }

private:
  std::atomic<int> refs_{1};
};

class Device : public RefCounted<Device> {
public:
  vx_result_t dev_write(uint64_t addr, const void *src, size_t size) {
    (void)addr, (void)src;
    written += size;
    return VX_SUCCESS;
  }
  vx_result_t query_caps(uint32_t id, uint64_t *out) {
    *out = id == VX_CAPS_NUM_THREADS ? 4 : 4;
    return VX_SUCCESS;
  }
  size_t written = 0;
};

class Buffer : public RefCounted<Buffer> {
public:
  static vx_result_t reserve(Device *dev, uint64_t addr, uint64_t size, uint32_t flags, Buffer **out) {
    (void)dev, (void)flags;
    *out = new Buffer();
    (*out)->addr = addr, (*out)->size = size;
    return VX_SUCCESS;
  }
  vx_result_t access(uint64_t off, uint64_t size, uint32_t flags) {
    (void)flags;
    return off + size <= this->size ? VX_SUCCESS : VX_ERR_INVALID_VALUE;
  }
  uint64_t addr = 0, size = 0;
};

class Kernel;

class Module : public RefCounted<Module> {
public:
  Module(Device *dev, Buffer *image, uint64_t base_addr);
  ~Module();
  static vx_result_t load_file(Device *dev, const char *path, Module **out);
  static vx_result_t load_bytes(Device *dev, const void *bytes, size_t size, Module **out);
  vx_result_t get_kernel(const char *name, Kernel **out);
  Device *device() const { return device_; }

  struct Symbol {
    std::string name;
    uint64_t pc;
  };
  Device *device_;
  Buffer *image_;
  uint64_t base_addr_;
  std::vector<Symbol> symbols_;
  std::unordered_map<std::string, Kernel *> kernel_cache_;
  std::mutex kcache_mu_;
};

class Kernel : public RefCounted<Kernel> {
public:
  Kernel(Module *mod, uint64_t pc);
  ~Kernel();
  static vx_result_t create(Module *mod, uint64_t pc, Kernel **out);
  vx_result_t get_max_block_size(uint32_t *x, uint32_t *y, uint32_t *z);
  uint64_t pc() const { return pc_; }
  Module *module_;
  uint64_t pc_;
};

inline Device *to_device(vx_device_h h) { return static_cast<Device *>(h); }
inline Module *to_module(vx_module_h h) { return reinterpret_cast<Module *>(h); }
inline Kernel *to_kernel(vx_kernel_h h) { return reinterpret_cast<Kernel *>(h); }
inline vx_module_h to_handle(Module *m) { return reinterpret_cast<vx_module_h>(m); }
inline vx_kernel_h to_handle(Kernel *k) { return reinterpret_cast<vx_kernel_h>(k); }

} // namespace vx

#endif
