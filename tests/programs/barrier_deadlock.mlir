// A gpu.barrier only some threads of a block reach: the emulated device
// stops the kernel and names the barrier's own line and column in this
// file (not a line of the lowering's device helpers), on every target.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @half_barrier(%out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %half = gpu.block_dim x
      %c2 = arith.constant 2 : index
      %h = arith.divui %half, %c2 : index
      %lt = arith.cmpi ult, %t, %h : index
      scf.if %lt {
        gpu.barrier
      }
      %v = arith.index_cast %t : index to i32
      memref.store %v, %out[%t] : memref<?xi32>
      gpu.return
    }
  }
  // CHECK: half_barrier: the kernel failed on the emulated device: deadlock: no running warp can release barrier
  // CHECK-SAME: barrier_deadlock.mlir:13:9)
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %dev = gpu.alloc () : memref<64xi32>
    %d = memref.cast %dev : memref<64xi32> to memref<?xi32>
    gpu.launch_func @kernels::@half_barrier blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%d : memref<?xi32>)
    gpu.dealloc %dev : memref<64xi32>
    return
  }
}
