// Arguments of every scalar width, to show RV32 padding in the argument
// buffer: i8 at 0, i64 at 8 (8-aligned), i16 at 16, f64 at 24, then a
// pointer at 32 and an index (32-bit) at 36.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale_offset(%flag: i8, %bias: i64, %shift: i16, %scale: f64,
                           %out: memref<?xi64>, %n: index) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %i64 = arith.index_cast %i : index to i64
        %f = arith.sitofp %i64 : i64 to f64
        %s = arith.mulf %f, %scale : f64
        %si = arith.fptosi %s : f64 to i64
        %sh = arith.extsi %shift : i16 to i64
        %fl = arith.extsi %flag : i8 to i64
        %t0 = arith.shli %si, %sh : i64
        %t1 = arith.addi %t0, %bias : i64
        %t2 = arith.addi %t1, %fl : i64
        memref.store %t2, %out[%i] : memref<?xi64>
      }
      gpu.return
    }
  }
}
