// vxl_lld_static.cpp - what lld's ELF driver needs in a program linked with
// LLVM's static archives (vortexd), and must not get: only that program
// links this file (lowering/CMakeLists.txt, vxl_static).
//
// lld's driver (Driver.cpp) initializes every LLVM target and registers
// the pass plugins LLVM was built with (Debian's: Polly), both for link
// time optimization.  vxl_lld.cpp's links never optimize (their inputs are
// objects, not bitcode), so here the plugin registers nothing and the
// initializers of every target but RISC-V do nothing: as an lld built for
// RISC-V alone, without ~75 MB of other targets' code in the program.
// tests/layering.py checks that each of these stays a stub (a few bytes)
// and that a target LLVM adds shows up there first.  Programs linked with
// the shared libLLVM get the real ones from it.

#include "llvm/Config/llvm-config.h"
#include "llvm/Plugins/PassPlugin.h"

llvm::PassPluginLibraryInfo getPollyPluginInfo();
llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly (not linked)", LLVM_VERSION_STRING, [](llvm::PassBuilder &) {}};
}

#define VXL_NO_TARGET(T)                                                                                     \
  extern "C" void LLVMInitialize##T##TargetInfo();                                                           \
  extern "C" void LLVMInitialize##T##TargetInfo() {}                                                         \
  extern "C" void LLVMInitialize##T##Target();                                                               \
  extern "C" void LLVMInitialize##T##Target() {}                                                             \
  extern "C" void LLVMInitialize##T##TargetMC();                                                             \
  extern "C" void LLVMInitialize##T##TargetMC() {}                                                           \
  extern "C" void LLVMInitialize##T##AsmPrinter();                                                           \
  extern "C" void LLVMInitialize##T##AsmPrinter() {}                                                         \
  extern "C" void LLVMInitialize##T##AsmParser();                                                            \
  extern "C" void LLVMInitialize##T##AsmParser() {}

// LLVM 22's targets (llvm/Config/Targets.def) but RISC-V
VXL_NO_TARGET(AArch64)
VXL_NO_TARGET(AMDGPU)
VXL_NO_TARGET(ARM)
VXL_NO_TARGET(AVR)
VXL_NO_TARGET(BPF)
VXL_NO_TARGET(Hexagon)
VXL_NO_TARGET(Lanai)
VXL_NO_TARGET(LoongArch)
VXL_NO_TARGET(M68k)
VXL_NO_TARGET(MSP430)
VXL_NO_TARGET(Mips)
VXL_NO_TARGET(NVPTX)
VXL_NO_TARGET(PowerPC)
VXL_NO_TARGET(SPIRV)
VXL_NO_TARGET(Sparc)
VXL_NO_TARGET(SystemZ)
VXL_NO_TARGET(VE)
VXL_NO_TARGET(WebAssembly)
VXL_NO_TARGET(X86)
VXL_NO_TARGET(XCore)
VXL_NO_TARGET(Xtensa)
