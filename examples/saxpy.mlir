// y[i] = a * x[i] + y[i] for i < n: one thread per element, 1-D grid.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%n: i32, %a: f32, %x: memref<?xf32>, %y: memref<?xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %i32 = arith.index_cast %i : index to i32
      %in = arith.cmpi slt, %i32, %n : i32
      scf.if %in {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
