// vxl_register.cpp - the dialects, interfaces, passes and translations the
// lowering uses, registered one by one (vxl_register.h).
//
// C++ because MLIR's C API registers only everything at once
// (mlirRegisterAllDialects, mlirRegisterAllPasses,
// mlirRegisterAllLLVMTranslations) or a dialect without the external
// interfaces its conversions need; everything at once brings every LLVM
// target into the daemon.

#include "vxl_register.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

extern "C" void vxl__register_dialects(MlirDialectRegistry r) {
  mlir::DialectRegistry &reg = *unwrap(r);
  reg.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect, mlir::async::AsyncDialect,
             mlir::bufferization::BufferizationDialect, mlir::cf::ControlFlowDialect, mlir::DLTIDialect,
             mlir::func::FuncDialect, mlir::gpu::GPUDialect, mlir::index::IndexDialect,
             mlir::linalg::LinalgDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
             mlir::memref::MemRefDialect, mlir::NVVM::NVVMDialect, mlir::ROCDL::ROCDLDialect,
             mlir::scf::SCFDialect, mlir::spirv::SPIRVDialect, mlir::tensor::TensorDialect,
             mlir::ub::UBDialect, mlir::vector::VectorDialect>();
  // what gpu-to-llvm asks each loaded dialect for: its conversion patterns
  mlir::arith::registerConvertArithToLLVMInterface(reg);
  mlir::cf::registerConvertControlFlowToLLVMInterface(reg);
  mlir::registerConvertFuncToLLVMInterface(reg);
  mlir::gpu::registerConvertGpuToLLVMInterface(reg);
  mlir::index::registerConvertIndexToLLVMInterface(reg);
  mlir::registerConvertMathToLLVMInterface(reg);
  mlir::registerConvertMemRefToLLVMInterface(reg);
  mlir::ub::registerConvertUBToLLVMInterface(reg);
  mlir::vector::registerConvertVectorToLLVMInterface(reg);
  // to LLVM IR: device modules (llvm), host modules (gpu.binary,
  // gpu.launch_func, through the default offloading handler)
  mlir::registerBuiltinDialectTranslation(reg);
  mlir::registerLLVMDialectTranslation(reg);
  mlir::registerGPUDialectTranslation(reg);
  mlir::gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(reg);
}

extern "C" void vxl__register_passes(void) {
  // device modules (VXL_PIPELINE_BASE, _FULL, the preparation passes)
  mlir::registerSCFToControlFlowPass();
  mlir::registerArithToLLVMConversionPass();
  mlir::registerConvertIndexToLLVMPass();
  mlir::registerFinalizeMemRefToLLVMConversionPass();
  mlir::registerConvertControlFlowToLLVMPass();
  mlir::registerConvertFuncToLLVMPass();
  mlir::registerUBToLLVMConversionPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::LLVM::registerDIScopeForLLVMFuncOpPass();
  mlir::memref::registerExpandStridedMetadataPass();
  mlir::registerLowerAffinePass();
  mlir::registerConvertMathToLLVMPass();
  mlir::registerConvertMathToLibmPass();
  mlir::registerSCFForToWhileLoop();
  mlir::registerConvertVectorToSCF();
  mlir::registerSymbolDCE();
  // host modules (VXL_PIPELINE_HOST, _HOST_ASYNC, outlining)
  mlir::registerGpuKernelOutliningPass();
  mlir::registerGpuAsyncRegionPass();
  mlir::registerConvertLinalgToLoopsPass();
  mlir::registerConvertVectorToLLVMPass();
  mlir::registerGpuToLLVMConversionPass();
  mlir::registerAsyncToAsyncRuntimePass();
  mlir::registerAsyncRuntimeRefCountingPass();
  mlir::registerConvertAsyncToLLVMPass();
}
