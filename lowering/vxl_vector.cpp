// vxl_vector.cpp - the vector dialect in kernels, lowered with upstream's
// own patterns (what --convert-vector-to-llvm applies) at the device
// pipeline's index width.
//
// C++ because the upstream pass fixes the index width at 64 bits (its
// LLVMTypeConverter takes no option), while every other pass of the device
// pipeline runs at 32 (docs/VORTEX_ABI.md, "Register width"): its memref
// descriptors and indices would not meet the others'.  The pattern sets
// are public; only the converter's index width differs.  LLVM's RISC-V
// code generation then scalarizes the vectors (RV32IMAF / RV64IMAFD have
// no vector unit).
#include "vxl_vector.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

extern "C" int vxl__vector_to_llvm(MlirOperation module, unsigned index_bitwidth) {
  mlir::Operation *root = unwrap(module);
  mlir::MLIRContext *ctx = root->getContext();
  namespace vector = mlir::vector;
  // progressive lowering to the ops the conversion takes (the upstream
  // pass's first stage, with its default options)
  {
    mlir::RewritePatternSet patterns(ctx);
    vector::populateVectorToVectorCanonicalizationPatterns(patterns);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorContractLoweringPatterns(patterns, vector::VectorContractLowering::Dot);
    vector::populateVectorMaskOpLoweringPatterns(patterns);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::populateVectorTransposeLoweringPatterns(patterns, vector::VectorTransposeLowering::EltWise);
    vector::populateVectorTransferLoweringPatterns(patterns, /*maxTransferRank=*/1);
    vector::populateVectorMaskMaterializationPatterns(patterns, /*force32BitVectorIndices=*/true);
    vector::populateVectorInsertExtractStridedSliceTransforms(patterns);
    vector::populateVectorStepLoweringPatterns(patterns);
    vector::populateVectorGatherLoweringPatterns(patterns);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorFromElementsUnrollPatterns(patterns);
    vector::populateVectorToElementsUnrollPatterns(patterns);
    if (mlir::failed(mlir::applyPatternsGreedily(root, std::move(patterns)))) return -1;
  }
  mlir::LowerToLLVMOptions options(ctx);
  options.overrideIndexBitwidth(index_bitwidth);
  mlir::LLVMTypeConverter converter(ctx, options);
  mlir::RewritePatternSet patterns(ctx);
  vector::populateVectorTransferLoweringPatterns(patterns);
  mlir::populateVectorToLLVMConversionPatterns(converter, patterns, /*reassociateFPReductions=*/false,
                                               /*force32BitVectorIndices=*/true);
  mlir::LLVMConversionTarget target(*ctx);
  target.addIllegalDialect<vector::VectorDialect>();
  target.markUnknownOpDynamicallyLegal([](mlir::Operation *) { return true; });
  return mlir::failed(mlir::applyPartialConversion(root, target, std::move(patterns))) ? -1 : 0;
}
