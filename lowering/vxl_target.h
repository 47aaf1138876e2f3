// vxl_target.h - #vortex.target<abi, xlen, warp_size, O>: the dialect
// "vortex" and its one attribute, a GPU compilation target (it implements
// gpu::TargetAttrInterface, as #nvvm.target and #rocdl.target do).
//
// C++ (a dialect, an attribute and an interface implementation have no C
// API).  Two programs hold it, each with its own implementation of the
// interface's two methods:
//   - the dialect plugin for stock mlir-opt (vxl_plugin.cpp), whose
//     serializeToObject compiles the gpu.module through vortexd;
//   - vortexd's lowering (vxl_target.cpp built with VXL_TARGET_IN_VORTEXD),
//     which parses the attribute on a program's gpu.modules, decides each
//     module's options from it and labels the host lowering's objects with
//     it; the C functions at the end are its interface to the C lowering.
//
// THREAD NOTES: attributes live in their MLIRContext; use them on the
// thread that owns that context.
#ifndef VXL_TARGET_H
#define VXL_TARGET_H

#ifdef __cplusplus
#include <optional>
#include <tuple>

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Config/llvm-config.h"

namespace vortexd {

// What serializeToObject returns and createObject takes: LLVM 22 passes
// the object's bytes; LLVM 23 (llvm-project PR 176697) a gpu::SerializedObject
// wrapping them (with a metadata dictionary this target leaves empty).
#if LLVM_VERSION_MAJOR >= 23
using SerializedObject = mlir::gpu::SerializedObject;
inline const llvm::SmallVector<char, 0> &objectBytes(const SerializedObject &o) { return o.getObject(); }
inline SerializedObject makeObject(llvm::SmallVector<char, 0> bytes) {
  return SerializedObject{std::move(bytes)};
}
#else
using SerializedObject = llvm::SmallVector<char, 0>;
inline const llvm::SmallVector<char, 0> &objectBytes(const SerializedObject &o) { return o; }
inline SerializedObject makeObject(llvm::SmallVector<char, 0> bytes) { return bytes; }
#endif

// The attribute's parameters: 0 for one not given (the default).
struct TargetAttrStorage : public mlir::AttributeStorage {
  using KeyTy = std::tuple<unsigned, unsigned, unsigned, unsigned>;
  TargetAttrStorage(const KeyTy &k) : key(k) {}
  bool operator==(const KeyTy &k) const { return k == key; }
  static llvm::hash_code hashKey(const KeyTy &k) {
    return llvm::hash_combine(std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k));
  }
  static TargetAttrStorage *construct(mlir::AttributeStorageAllocator &a, const KeyTy &k) {
    return new (a.allocate<TargetAttrStorage>()) TargetAttrStorage(k);
  }
  KeyTy key; // abi (2, 3), xlen (32, 64), warp_size (1..32), O (opt level + 1)
};

class TargetAttr : public mlir::Attribute::AttrBase<TargetAttr, mlir::Attribute, TargetAttrStorage,
                                                    mlir::gpu::TargetAttrInterface::Trait> {
public:
  using Base::Base;
  static constexpr llvm::StringLiteral name = "vortex.target";
  static TargetAttr get(mlir::MLIRContext *ctx, unsigned abi, unsigned xlen, unsigned warp, unsigned o1) {
    return Base::get(ctx, TargetAttrStorage::KeyTy(abi, xlen, warp, o1));
  }
  unsigned abi() const { return std::get<0>(getImpl()->key); }
  unsigned xlen() const { return std::get<1>(getImpl()->key); }
  unsigned warpSize() const { return std::get<2>(getImpl()->key); }
  unsigned optLevel() const { return std::get<3>(getImpl()->key) ? std::get<3>(getImpl()->key) - 1 : 2; }
  bool hasOptLevel() const { return std::get<3>(getImpl()->key) != 0; }

  // gpu::TargetAttrInterface: defined by the program holding the attribute
  std::optional<SerializedObject> serializeToObject(mlir::Operation *module,
                                                    const mlir::gpu::TargetOptions &options) const;
  mlir::Attribute createObject(mlir::Operation *module, const SerializedObject &object,
                               const mlir::gpu::TargetOptions &options) const;
};

class VortexDialect : public mlir::Dialect {
public:
  explicit VortexDialect(mlir::MLIRContext *ctx);
  static llvm::StringRef getDialectNamespace() { return "vortex"; }
  mlir::Attribute parseAttribute(mlir::DialectAsmParser &p, mlir::Type type) const override;
  void printAttribute(mlir::Attribute attr, mlir::DialectAsmPrinter &p) const override;
};

} // namespace vortexd

MLIR_DECLARE_EXPLICIT_TYPE_ID(vortexd::TargetAttr)
MLIR_DECLARE_EXPLICIT_TYPE_ID(vortexd::VortexDialect)
#endif /* __cplusplus */

/* vortexd's lowering only (vxl_target.cpp with VXL_TARGET_IN_VORTEXD) */
#include <stdint.h>

#include <mlir-c/IR.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A #vortex.target's fields, 0 for one it does not give. */
typedef struct {
  uint32_t vortex_abi, xlen, warp_size;
  int32_t opt_level; /* -1: not given */
} vxl__target_fields;

/* Loads the dialect "vortex" into ctx, so that #vortex.target parses and
 * verifies as a GPU target.  Call on ctx's thread, before parsing. */
void vxl__target_load(MlirContext ctx);

/* 1 and *out when attr is a #vortex.target, else 0. */
int vxl__target_read(MlirAttribute attr, vxl__target_fields *out);

#ifdef __cplusplus
}
#endif
#endif
