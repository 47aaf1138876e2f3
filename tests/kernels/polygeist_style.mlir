// A kernel written the way Polygeist's cgeist emits CUDA/HIP code, for the
// project's own tests of what such files need: a host DLTI spec whose
// entries are dense<..> : vector<Kxi32> (MLIR 22 wants i64), attributes and
// ops of the unregistered polygeist dialect, a host wrapper that launches
// through "polygeist.alternatives" whose second branch names a kernel the
// file does not define, and the kernel signature cgeist produces for
//   __global__ void scale(int n, const int *in, float factor, int *out)
// (arguments reordered: n, in, factor, out).  For g < n:
//   out[g] = (int)((float)in[g] * factor)
module attributes {dlti.dl_spec = #dlti.dl_spec<#dlti.dl_entry<i64, dense<64> : vector<2xi32>>, #dlti.dl_entry<f32, dense<32> : vector<2xi32>>, #dlti.dl_entry<!llvm.ptr, dense<64> : vector<4xi32>>, #dlti.dl_entry<"dlti.endianness", "little">>, gpu.container_module, llvm.target_triple = "x86_64-unknown-linux-gnu", "polygeist.target-cpu" = "x86-64"} {
  gpu.module @__polygeist_gpu_module {
    gpu.func @_Z12launch_scalePiS_if_kernel1(%n: i32, %in: memref<?xi32>, %factor: f32, %out: memref<?xi32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %c64_i32 = arith.constant 64 : i32
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %b = arith.index_cast %bid : index to i32
      %t = arith.index_cast %tid : index to i32
      %base = arith.muli %b, %c64_i32 : i32
      %g = arith.addi %base, %t : i32
      %gi = arith.index_cast %g : i32 to index
      %inb = arith.cmpi slt, %g, %n : i32
      scf.if %inb {
        %x = memref.load %in[%gi] : memref<?xi32>
        %xf = arith.sitofp %x : i32 to f32
        %y = arith.mulf %xf, %factor : f32
        %yi = arith.fptosi %y : f32 to i32
        memref.store %yi, %out[%gi] : memref<?xi32>
      }
      gpu.return
    }
  }
  func.func @_Z12launch_scalePiS_if(%in: memref<?xi32>, %out: memref<?xi32>, %n: i32, %factor: f32) attributes {llvm.linkage = #llvm.linkage<external>} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c32 = arith.constant 32 : index
    %c63 = arith.constant 63 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = arith.addi %n, %c63 : i32
    %1 = arith.divui %0, %c64_i32 : i32
    %blocks = arith.index_cast %1 : i32 to index
    "polygeist.alternatives"() ({
      %e = "polygeist.gpu_error"() ({
        gpu.launch_func @__polygeist_gpu_module::@_Z12launch_scalePiS_if_kernel1 blocks in (%blocks, %c1, %c1) threads in (%c64, %c1, %c1) args(%n : i32, %in : memref<?xi32>, %factor : f32, %out : memref<?xi32>)
        "polygeist.polygeist_yield"() : () -> ()
      }) : () -> index
      "polygeist.polygeist_yield"() : () -> ()
    }, {
      %e = "polygeist.gpu_error"() ({
        gpu.launch_func @__polygeist_gpu_module::@_Z12launch_scalePiS_if_kernel2 blocks in (%blocks, %c1, %c1) threads in (%c32, %c1, %c1) args(%n : i32, %in : memref<?xi32>, %factor : f32, %out : memref<?xi32>)
        "polygeist.polygeist_yield"() : () -> ()
      }) : () -> index
      "polygeist.polygeist_yield"() : () -> ()
    }) {alternatives.descs = ["block size 64", "block size 32"], alternatives.type = "gpu_kernel"} : () -> ()
    return
  }
}
