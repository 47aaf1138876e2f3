// Private (per-thread) memory holding thread-dependent values: the same
// address holds another value in each thread, so what is read back is
// divergent even though the address is not.  g = global id:
//   out[g] = sum_{i < g % 4} i  (trip count read back from a private buffer)
//          + (the private copy of g is odd ? 100 : 0)
module {
  gpu.module @m {
    gpu.func @private_trip_count(%out: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i100 = arith.constant 100 : i32
      %g = gpu.global_id x
      %gi = arith.index_cast %g : index to i32
      %p = memref.alloca() : memref<2xindex>
      %m = arith.remui %g, %c4 : index
      memref.store %m, %p[%c0] : memref<2xindex>
      memref.store %g, %p[%c1] : memref<2xindex>
      %v = memref.load %p[%c0] : memref<2xindex>
      %s = scf.for %i = %c0 to %v step %c1 iter_args(%a = %i0) -> (i32) {
        %ii = arith.index_cast %i : index to i32
        %b = arith.addi %a, %ii : i32
        scf.yield %b : i32
      }
      %w = memref.load %p[%c1] : memref<2xindex>
      %wi = arith.index_cast %w : index to i32
      %odd = arith.andi %wi, %i1 : i32
      %isodd = arith.cmpi ne, %odd, %i0 : i32
      %r = scf.if %isodd -> (i32) {
        %x = arith.addi %s, %i100 : i32
        scf.yield %x : i32
      } else {
        scf.yield %s : i32
      }
      memref.store %r, %out[%g] : memref<?xi32>
      gpu.return
    }
  }
}
