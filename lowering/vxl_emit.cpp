// vxl_emit.cpp - one code-generation pass manager per compiler, reused
// for every module it emits (see vxl_emit.h).  C++ only because the C API
// has no way to keep a legacy::PassManager; everything here is exported as
// C functions.
#include "vxl_emit.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

struct vxl_emitter {
  llvm::TargetMachine *tm;
  llvm::SmallVector<char, 0> bytes; // the object of the module being emitted
  llvm::raw_svector_ostream out{bytes};
  llvm::legacy::PassManager pm;
};

extern "C" vxl_emitter *vxl_emitter_create(LLVMTargetMachineRef tm) {
  auto *e = new (std::nothrow) vxl_emitter;
  if (!e) return nullptr;
  e->tm = reinterpret_cast<llvm::TargetMachine *>(tm); // how the C API unwraps it
  if (e->tm->addPassesToEmitFile(e->pm, e->out, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    delete e;
    return nullptr;
  }
  return e;
}

extern "C" int vxl_emitter_emit(vxl_emitter *e, LLVMModuleRef m, uint8_t **obj, size_t *obj_size) {
  llvm::Module *mod = reinterpret_cast<llvm::Module *>(m);
  mod->setDataLayout(e->tm->createDataLayout());
  e->bytes.clear();
  e->pm.run(*mod);
  size_t n = e->bytes.size();
  *obj = static_cast<uint8_t *>(std::malloc(n ? n : 1));
  if (!*obj) return -ENOMEM;
  std::memcpy(*obj, e->bytes.data(), n);
  *obj_size = n;
  e->bytes.clear();
  return 0;
}

extern "C" void vxl_emitter_destroy(vxl_emitter *e) { delete e; }
