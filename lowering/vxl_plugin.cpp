// vxl_plugin.cpp - #vortex.target, a GPU compilation target for stock
// mlir-opt: a dialect plugin (mlir-opt-22 --load-dialect-plugin=THIS) whose
// one attribute implements gpu::TargetAttrInterface, so that
// --gpu-module-to-binary turns `gpu.module @m [#vortex.target<...>]` into a
// gpu.binary whose #gpu.object holds what vortexd compiled (and cached) for
// it, through libvxc, starting a daemon as vxc does.
//
// C++ because a dialect, an attribute and an interface implementation have
// no C API; it is a shared object of its own, never linked into vortexd
// (the dialect itself, vxl_target.cpp, is in both; vortexd has its own
// implementation of the interface).
//
// The object (format "bin") is what libvortexd_runtime's mgpuModuleLoad
// takes: the header lines vortexd's host lowering writes (the key, the
// module's place, each kernel's host argument line), then a line
// "// vortexd-entry" and the compiled entry itself (object, image when the
// daemon has a Vortex SDK, kernel records, checksum): the runtime launches
// from it without asking the daemon again.  The #gpu.object's properties
// hold the key and the target; its kernels table each kernel's argument
// layout (docs/mlir-plugin.md).
//
// THREAD NOTES: MLIR calls serializeToObject on any thread; each call has
// its own daemon connection.
#include <cstring>
#include <optional>
#include <string>
#include <tuple>

#include "vxl_target.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

extern "C" {
#include "client/vxc.h"
#include "protocol/vxp.h"
#include "protocol/vxp_entry.h"
}

namespace vortexd {

// The line the runtime checks a launch against, for each kernel of
// gpu.module gm (the host lowering's VXL_HOST_ARGS_TAG, lowering/vxl.h).
static void hostArgsLines(mlir::Operation *gm, std::string &out) {
  for (mlir::Operation &op : gm->getRegion(0).front()) {
    auto f = llvm::dyn_cast<mlir::gpu::GPUFuncOp>(op);
    if (!f || !f.isKernel()) continue;
    out += "// vortexd-host-args: ";
    for (char ch : f.getName()) {
      if (std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("_.$-", ch)) {
        out += ch;
      } else {
        char e[4];
        std::snprintf(e, sizeof e, "%%%02X", static_cast<unsigned char>(ch));
        out += e;
      }
    }
    for (mlir::Type t : f.getFunctionType().getInputs()) {
      if (auto m = llvm::dyn_cast<mlir::MemRefType>(t))
        out += " m" + std::to_string(m.getRank());
      else if (llvm::isa<mlir::LLVM::LLVMPointerType>(t))
        out += " p";
      else if (t.isIndex())
        out += " s8";
      else if (t.isIntOrFloat() && t.getIntOrFloatBitWidth() <= 64)
        out += " s" + std::to_string((t.getIntOrFloatBitWidth() + 7) / 8);
      else
        out += " ?";
    }
    out += "\n";
  }
}

std::optional<SerializedObject> TargetAttr::serializeToObject(mlir::Operation *module,
                                                              const mlir::gpu::TargetOptions &) const {
  // the module's text as vortexd's host lowering sends it: without its
  // targets (another context does not know this attribute), with locations
  // inline (printed where it is, in its parent, it prints no aliases)
  mlir::Attribute targets = module->getAttr("targets");
  module->removeAttr("targets");
  std::string text = "module attributes {gpu.container_module} {\n";
  {
    llvm::raw_string_ostream os(text);
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo(true, false));
  }
  text += "\n}\n";
  if (targets) module->setAttr("targets", targets);
  vxc_conn *c = nullptr;
  int rc = vxc_connect_or_spawn(nullptr, nullptr, 15000, &c);
  if (rc != 0) {
    module->emitError() << "cannot reach vortexd: " << std::strerror(-rc);
    return std::nullopt;
  }
  vxc_compile_options o{};
  o.opt_level = optLevel();
  o.warp_size = warpSize();
  o.vortex_abi = abi();
  o.xlen = xlen();
  vxp_response r;
  rc = vxc_compile(c, text.data(), text.size(), VXP_DEVICE_MODULE_NAME, &o, &r);
  vxc_close(c);
  if (rc != 0) {
    module->emitError() << "vortexd: " << std::strerror(-rc);
    return std::nullopt;
  }
  if (r.status != VXP_STATUS_OK || !r.entry || !r.key) {
    mlir::InFlightDiagnostic d = module->emitError() << "vortexd could not compile the module";
    for (uint32_t i = 0; i < r.ndiags; i++)
      d.attachNote() << r.diags[i];
    vxp_response_clear(&r);
    return std::nullopt;
  }
  std::string head = std::string("// vortexd-key: ") + r.key + "\n";
  std::string where = "?";
  if (auto fl = llvm::dyn_cast<mlir::FileLineColLoc>(module->getLoc()))
    where =
        fl.getFilename().str() + ":" + std::to_string(fl.getLine()) + ":" + std::to_string(fl.getColumn());
  head += "// vortexd-module: @" + mlir::SymbolTable::getSymbolName(module).str() + " at " + where + "\n";
  hostArgsLines(module, head);
  head += "// vortexd-entry\n";
  llvm::SmallVector<char, 0> out(head.begin(), head.end());
  out.append(reinterpret_cast<const char *>(r.entry), reinterpret_cast<const char *>(r.entry) + r.entry_size);
  vxp_response_clear(&r);
  return makeObject(std::move(out));
}

// The entry in an object serializeToObject made (after its
// "// vortexd-entry" line), unpacked into r: 0, or -1.
static int unpackObject(const llvm::SmallVector<char, 0> &object, vxp_response &r) {
  static const char marker[] = "// vortexd-entry\n";
  llvm::StringRef s(object.data(), object.size());
  size_t at = s.find(marker);
  if (at == llvm::StringRef::npos) return -1;
  std::memset(&r, 0, sizeof r);
  size_t from = at + sizeof marker - 1;
  r.entry_size = object.size() - from;
  r.entry = static_cast<uint8_t *>(std::malloc(r.entry_size ? r.entry_size : 1));
  if (!r.entry) return -1;
  std::memcpy(r.entry, object.data() + from, r.entry_size);
  return vxp_entry_unpack(&r, nullptr) == VXP_OK ? 0 : -1;
}

mlir::Attribute TargetAttr::createObject(mlir::Operation *module, const SerializedObject &serialized,
                                         const mlir::gpu::TargetOptions &) const {
  const llvm::SmallVector<char, 0> &object = objectBytes(serialized);
  mlir::MLIRContext *ctx = module->getContext();
  mlir::Builder b(ctx);
  vxp_response r;
  if (unpackObject(object, r) != 0) {
    module->emitError() << "vortexd's object cannot be read back";
    return {};
  }
  char target[VXP_TARGET_NAME_MAX];
  vxp_target_name(r.nkernels ? r.kernels[0].vortex_abi : abi(), r.nkernels ? r.kernels[0].xlen : xlen(),
                  target);
  llvm::SmallVector<mlir::NamedAttribute, 3> props = {b.getNamedAttr("key", b.getStringAttr(r.key)),
                                                      b.getNamedAttr("target", b.getStringAttr(target))};
  if (r.image) props.push_back(b.getNamedAttr("vxbin_bytes", b.getI64IntegerAttr((int64_t)r.image_size)));
  // each kernel's argument layout, as the host packs its argument buffer
  llvm::SmallVector<mlir::gpu::KernelMetadataAttr> kernels;
  for (uint32_t i = 0; i < r.nkernels; i++) {
    const vxp_kernel &k = r.kernels[i];
    llvm::SmallVector<mlir::Attribute> args;
    for (uint32_t a = 0; a < k.nargs; a++) {
      const vxp_arg &x = k.args[a];
      args.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("type", b.getStringAttr(x.type ? x.type : "")),
           b.getNamedAttr("kind", b.getStringAttr(x.kind == VXP_ARG_POINTER ? "pointer" : "scalar")),
           b.getNamedAttr("offset", b.getI32IntegerAttr((int32_t)x.offset)),
           b.getNamedAttr("size", b.getI32IntegerAttr((int32_t)x.size)),
           b.getNamedAttr("align", b.getI32IntegerAttr((int32_t)x.align))}));
    }
    mlir::DictionaryAttr meta =
        b.getDictionaryAttr({b.getNamedAttr("entry", b.getStringAttr(k.entry ? k.entry : "")),
                             b.getNamedAttr("args", b.getArrayAttr(args)),
                             b.getNamedAttr("args_size", b.getI32IntegerAttr((int32_t)k.args_size)),
                             b.getNamedAttr("launch_offset", b.getI32IntegerAttr((int32_t)k.launch_offset)),
                             b.getNamedAttr("buffer_size", b.getI32IntegerAttr((int32_t)k.buffer_size)),
                             b.getNamedAttr("shared_bytes", b.getI32IntegerAttr((int32_t)k.shared_bytes)),
                             b.getNamedAttr("subgroup_size", b.getI32IntegerAttr((int32_t)k.subgroup_size))});
    const char *plain = std::strstr(k.name, "::");
    auto f = llvm::dyn_cast_or_null<mlir::gpu::GPUFuncOp>(
        mlir::SymbolTable::lookupSymbolIn(module, b.getStringAttr(plain ? plain + 2 : k.name)));
    if (!f) continue; /* a record of no kernel here: nothing to describe */
    kernels.push_back(mlir::gpu::KernelMetadataAttr::get(llvm::cast<mlir::FunctionOpInterface>(*f), meta));
  }
  mlir::Attribute obj =
      mlir::gpu::ObjectAttr::get(ctx, *this, mlir::gpu::CompilationTarget::Binary,
                                 b.getStringAttr(llvm::StringRef(object.data(), object.size())),
                                 b.getDictionaryAttr(props), mlir::gpu::KernelTableAttr::get(ctx, kernels));
  vxp_response_clear(&r);
  return obj;
}

} // namespace vortexd

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "vortexd", VORTEXD_VERSION,
          [](mlir::DialectRegistry *registry) { registry->insert<vortexd::VortexDialect>(); }};
}
