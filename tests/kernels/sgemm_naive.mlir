// C[M x N] = A[M x K] * B[K x N], row-major, one thread per element of C.
// 2-D grid and block; sizes need not be multiples of the block.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sgemm_naive(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>,
                          %m: index, %n: index, %k: index) kernel {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %col0 = arith.muli %bx, %dx : index
      %col = arith.addi %col0, %tx : index
      %row0 = arith.muli %by, %dy : index
      %row = arith.addi %row0, %ty : index
      %rin = arith.cmpi ult, %row, %m : index
      %cin = arith.cmpi ult, %col, %n : index
      %in = arith.andi %rin, %cin : i1
      scf.if %in {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %zero = arith.constant 0.0 : f32
        %sum = scf.for %i = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
          %ai0 = arith.muli %row, %k : index
          %ai = arith.addi %ai0, %i : index
          %bi0 = arith.muli %i, %n : index
          %bi = arith.addi %bi0, %col : index
          %av = memref.load %a[%ai] : memref<?xf32>
          %bv = memref.load %b[%bi] : memref<?xf32>
          %p = arith.mulf %av, %bv : f32
          %s = arith.addf %acc, %p : f32
          scf.yield %s : f32
        }
        %ci0 = arith.muli %row, %n : index
        %ci = arith.addi %ci0, %col : index
        memref.store %sum, %c[%ci] : memref<?xf32>
      }
      gpu.return
    }
  }
}
