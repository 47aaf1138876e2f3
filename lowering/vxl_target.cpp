// vxl_target.cpp - the dialect "vortex" and #vortex.target (vxl_target.h):
// its storage, parser and printer, shared by the mlir-opt plugin and
// vortexd; with VXL_TARGET_IN_VORTEXD also the interface as vortexd holds
// it and the C functions the C lowering calls.
#include "vxl_target.h"

#include <string>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

MLIR_DEFINE_EXPLICIT_TYPE_ID(vortexd::TargetAttr)
MLIR_DEFINE_EXPLICIT_TYPE_ID(vortexd::VortexDialect)

namespace vortexd {

VortexDialect::VortexDialect(mlir::MLIRContext *ctx)
    : mlir::Dialect(getDialectNamespace(), ctx, mlir::TypeID::get<VortexDialect>()) {
  addAttributes<TargetAttr>();
}

// #vortex.target<abi = 2|3, xlen = 32|64, warp_size = N, O = 0-3>, every
// field optional (the daemon's default), in any order.
mlir::Attribute VortexDialect::parseAttribute(mlir::DialectAsmParser &p, mlir::Type) const {
  llvm::StringRef kw;
  if (p.parseKeyword(&kw) || kw != "target") {
    p.emitError(p.getNameLoc(), "unknown vortex attribute (there is #vortex.target<...>)");
    return {};
  }
  unsigned v[4] = {0, 0, 0, 0};
  static const char *const keys[4] = {"abi", "xlen", "warp_size", "O"};
  if (succeeded(p.parseOptionalLess()) && failed(p.parseOptionalGreater())) {
    do {
      llvm::StringRef key;
      unsigned value = 0;
      llvm::SMLoc at = p.getCurrentLocation();
      if (p.parseKeyword(&key) || p.parseEqual() || p.parseInteger(value)) return {};
      int i = 0;
      while (i < 4 && key != keys[i])
        i++;
      if (i == 4) {
        p.emitError(at, "#vortex.target takes abi, xlen, warp_size and O, not ") << key;
        return {};
      }
      bool ok = i == 0   ? (value == 2 || value == 3)
                : i == 1 ? (value == 32 || value == 64)
                : i == 2 ? (value >= 1 && value <= 32 && (value & (value - 1)) == 0)
                         : value <= 3;
      if (!ok) {
        p.emitError(at, "#vortex.target: ") << key << " = " << value
                                            << (i == 0   ? " (abi is 2 or 3)"
                                                : i == 1 ? " (xlen is 32 or 64)"
                                                : i == 2 ? " (warp_size is a power of two from 1 to 32)"
                                                         : " (O is 0 to 3)");
        return {};
      }
      v[i] = i == 3 ? value + 1 : value;
    } while (succeeded(p.parseOptionalComma()));
    if (p.parseGreater()) return {};
  }
  return TargetAttr::get(getContext(), v[0], v[1], v[2], v[3]);
}

void VortexDialect::printAttribute(mlir::Attribute attr, mlir::DialectAsmPrinter &p) const {
  auto t = llvm::cast<TargetAttr>(attr);
  p << "target";
  llvm::SmallVector<std::string, 4> fields;
  if (t.abi()) fields.push_back("abi = " + std::to_string(t.abi()));
  if (t.xlen()) fields.push_back("xlen = " + std::to_string(t.xlen()));
  if (t.warpSize()) fields.push_back("warp_size = " + std::to_string(t.warpSize()));
  if (t.hasOptLevel()) fields.push_back("O = " + std::to_string(t.optLevel()));
  if (fields.empty()) return;
  p << "<";
  for (size_t i = 0; i < fields.size(); i++)
    p << (i ? ", " : "") << fields[i];
  p << ">";
}

#ifdef VXL_TARGET_IN_VORTEXD
// Within vortexd a gpu.module is never serialized by MLIR's
// --gpu-module-to-binary: the host lowering makes its gpu.binary itself,
// holding the module's text, compiled at its first launch.
std::optional<SerializedObject> TargetAttr::serializeToObject(mlir::Operation *module,
                                                              const mlir::gpu::TargetOptions &) const {
  module->emitError() << "#vortex.target: within vortexd a gpu.module is compiled at its first launch "
                         "(libvortexd_runtime); mlir-opt compiles it with vortexd's dialect plugin";
  return std::nullopt;
}

mlir::Attribute TargetAttr::createObject(mlir::Operation *module, const SerializedObject &object,
                                         const mlir::gpu::TargetOptions &) const {
  mlir::Builder b(module->getContext());
  const llvm::SmallVector<char, 0> &bytes = objectBytes(object);
  return mlir::gpu::ObjectAttr::get(module->getContext(), *this, mlir::gpu::CompilationTarget::Binary,
                                    b.getStringAttr(llvm::StringRef(bytes.data(), bytes.size())), nullptr,
                                    nullptr);
}
#endif

} // namespace vortexd

#ifdef VXL_TARGET_IN_VORTEXD
#include "mlir/CAPI/IR.h"

extern "C" void vxl__target_load(MlirContext ctx) { unwrap(ctx)->getOrLoadDialect<vortexd::VortexDialect>(); }

extern "C" int vxl__target_read(MlirAttribute attr, vxl__target_fields *out) {
  auto t = llvm::dyn_cast_or_null<vortexd::TargetAttr>(unwrap(attr));
  if (!t) return 0;
  *out = vxl__target_fields{t.abi(), t.xlen(), t.warpSize(), t.hasOptLevel() ? (int32_t)t.optLevel() : -1};
  return 1;
}
#endif
