// Reverses each block's slice of in[] into out[] through dynamic shared
// memory, written the way Polygeist writes `extern __shared__ float s[]`:
// a 1-element address-space-3 global indexed past its size.  The launch
// header's dynamic shared-memory size must be blockDim.x * 4 bytes.  A
// static workgroup buffer sits before it to show the two do not overlap.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" @dyn : memref<1xf32, 3>
    memref.global "private" @flagbuf : memref<4xi32, 3>
    gpu.func @reverse_block(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.get_global @dyn : memref<1xf32, 3>
      %f = memref.get_global @flagbuf : memref<4xi32, 3>
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %i = gpu.global_id x
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %s[%tid] : memref<1xf32, 3>
      %seven = arith.constant 7 : i32
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        memref.store %seven, %f[%c0] : memref<4xi32, 3>
      }
      gpu.barrier
      %last = arith.subi %bdim, %c1 : index
      %r = arith.subi %last, %tid : index
      %w = memref.load %s[%r] : memref<1xf32, 3>
      %fl = memref.load %f[%c0] : memref<4xi32, 3>
      %ff = arith.sitofp %fl : i32 to f32
      %res = arith.addf %w, %ff : f32
      memref.store %res, %out[%i] : memref<?xf32>
      gpu.return
    }
  }
}
