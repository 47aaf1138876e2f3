// C = A * B (M x K times K x N, row-major) with 8x8 tiles staged in
// workgroup memory: two attributions, two barriers per tile.  Requires
// blockDim = (8, 8, 1); edges are padded with zeros.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sgemm_tiled(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>,
                          %m: index, %n: index, %k: index)
        workgroup(%ta: memref<8x8xf32, #gpu.address_space<workgroup>>,
                  %tb: memref<8x8xf32, #gpu.address_space<workgroup>>) kernel
        attributes {gpu.known_block_size = array<i32: 8, 8, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %col0 = arith.muli %bx, %c8 : index
      %col = arith.addi %col0, %tx : index
      %row0 = arith.muli %by, %c8 : index
      %row = arith.addi %row0, %ty : index
      %kp = arith.addi %k, %c7 : index
      %ntiles = arith.divui %kp, %c8 : index
      %sum = scf.for %t = %c0 to %ntiles step %c1 iter_args(%acc = %zero) -> (f32) {
        %t8 = arith.muli %t, %c8 : index
        // A tile: row, t8 + tx
        %acol = arith.addi %t8, %tx : index
        %ain1 = arith.cmpi ult, %row, %m : index
        %ain2 = arith.cmpi ult, %acol, %k : index
        %ain = arith.andi %ain1, %ain2 : i1
        %av = scf.if %ain -> (f32) {
          %ai0 = arith.muli %row, %k : index
          %ai = arith.addi %ai0, %acol : index
          %v = memref.load %a[%ai] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %av, %ta[%ty, %tx] : memref<8x8xf32, #gpu.address_space<workgroup>>
        // B tile: t8 + ty, col
        %brow = arith.addi %t8, %ty : index
        %bin1 = arith.cmpi ult, %brow, %k : index
        %bin2 = arith.cmpi ult, %col, %n : index
        %bin = arith.andi %bin1, %bin2 : i1
        %bv = scf.if %bin -> (f32) {
          %bi0 = arith.muli %brow, %n : index
          %bi = arith.addi %bi0, %col : index
          %v = memref.load %b[%bi] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %bv, %tb[%ty, %tx] : memref<8x8xf32, #gpu.address_space<workgroup>>
        gpu.barrier
        %part = scf.for %i = %c0 to %c8 step %c1 iter_args(%p = %acc) -> (f32) {
          %x = memref.load %ta[%ty, %i] : memref<8x8xf32, #gpu.address_space<workgroup>>
          %y = memref.load %tb[%i, %tx] : memref<8x8xf32, #gpu.address_space<workgroup>>
          %xy = arith.mulf %x, %y : f32
          %p2 = arith.addf %p, %xy : f32
          scf.yield %p2 : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      %rin = arith.cmpi ult, %row, %m : index
      %cin = arith.cmpi ult, %col, %n : index
      %in = arith.andi %rin, %cin : i1
      scf.if %in {
        %ci0 = arith.muli %row, %n : index
        %ci = arith.addi %ci0, %col : index
        memref.store %sum, %c[%ci] : memref<?xf32>
      }
      gpu.return
    }
  }
}
