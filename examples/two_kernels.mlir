// Two kernels in one module: one object and one image for both, each
// kernel with its own entry and its kernel id in the module's dispatcher.
// The second one uses a 2-D grid and a barrier between its two phases.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%v: f32, %out: memref<?xf32>, %n: index) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        memref.store %v, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @transpose_add(%a: memref<?x16xf32>, %b: memref<?x16xf32>, %rows: index) kernel
        attributes {gpu.known_block_size = array<i32: 16, 16, 1>} {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %c16 = arith.constant 16 : index
      %r0 = arith.muli %by, %c16 : index
      %r = arith.addi %r0, %ty : index
      %c = arith.addi %tx, %bx : index
      %in = arith.cmpi ult, %r, %rows : index
      scf.if %in {
        %v = memref.load %a[%r, %c] : memref<?x16xf32>
        memref.store %v, %b[%r, %c] : memref<?x16xf32>
      }
      gpu.barrier
      scf.if %in {
        %w = memref.load %b[%r, %c] : memref<?x16xf32>
        %s = arith.addf %w, %w : f32
        memref.store %s, %b[%r, %c] : memref<?x16xf32>
      }
      gpu.return
    }
  }
}
