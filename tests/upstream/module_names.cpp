/*
 * module_names.cpp - loads a .vxbin with upstream Vortex's own module
 * loader (sw/runtime/common/module.cpp, compiled unmodified against
 * vortex2_internal.h) and resolves kernel names in it, as a program on
 * Vortex 3.0 does with vx_module_load_bytes and vx_module_get_kernel.
 *   module_names FILE.vxbin NAME...
 * prints, per NAME, "NAME 0xPC", or "NAME refused" when the module has no
 * such kernel; exit status 0, or 2 when the file cannot be read or loaded.
 */
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "vortex2_internal.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return 2;
  auto *dev = new vx::Device();
  vx_module_h mod = nullptr;
  if (vx_module_load_bytes(dev, bytes.data(), bytes.size(), &mod) != VX_SUCCESS) {
    std::fprintf(stderr, "module_names: %s: not loaded\n", argv[1]);
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    vx_kernel_h k = nullptr;
    if (vx_module_get_kernel(mod, argv[i], &k) != VX_SUCCESS) {
      std::printf("%s refused\n", argv[i]);
      continue;
    }
    std::printf("%s 0x%" PRIx64 "\n", argv[i], vx::to_kernel(k)->pc());
    vx_kernel_release(k);
  }
  vx_module_release(mod);
  dev->release();
  return 0;
}
