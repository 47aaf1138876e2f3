// Divergence nested in divergence: a loop whose trip count depends on the
// thread (g % 5), holding a divergent if whose then-side runs another
// thread-dependent loop; then a while loop with a thread-dependent exit
// (Collatz steps of g) holding a divergent if-else with results.
//   out[g]  = sum over i < g % 5 of (i odd ? sum_{j<i} j : 100)
//   out2[g] = Collatz steps from g down to 1 (0 for g <= 1)
module {
  gpu.module @m {
    gpu.func @nested_loops(%out: memref<?xi32>, %out2: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %i100 = arith.constant 100 : i32
      %gi = gpu.global_id x
      %tid = gpu.thread_id x
      %g = arith.index_cast %gi : index to i32
      %ub = arith.remui %gi, %c5 : index
      %s = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %i0) -> (i32) {
        %ii = arith.index_cast %i : index to i32
        %odd = arith.andi %ii, %i1 : i32
        %isodd = arith.cmpi ne, %odd, %i0 : i32
        %v = scf.if %isodd -> (i32) {
          %inner = scf.for %j = %c0 to %i step %c1 iter_args(%a2 = %acc) -> (i32) {
            %jj = arith.index_cast %j : index to i32
            %x = arith.addi %a2, %jj : i32
            scf.yield %x : i32
          }
          scf.yield %inner : i32
        } else {
          %y = arith.addi %acc, %i100 : i32
          scf.yield %y : i32
        }
        scf.yield %v : i32
      }
      memref.store %s, %out[%gi] : memref<?xi32>
      %w:2 = scf.while (%k = %g, %cnt = %i0) : (i32, i32) -> (i32, i32) {
        %more = arith.cmpi sgt, %k, %i1 : i32
        scf.condition(%more) %k, %cnt : i32, i32
      } do {
      ^bb0(%k2: i32, %c2: i32):
        %r = arith.remui %k2, %i2 : i32
        %even = arith.cmpi eq, %r, %i0 : i32
        %nk = scf.if %even -> (i32) {
          %h = arith.divui %k2, %i2 : i32
          scf.yield %h : i32
        } else {
          %t = arith.muli %k2, %i2 : i32
          %t1 = arith.addi %t, %k2 : i32
          %t2 = arith.addi %t1, %i1 : i32
          scf.yield %t2 : i32
        }
        %nc = arith.addi %c2, %i1 : i32
        scf.yield %nk, %nc : i32, i32
      }
      memref.store %w#1, %out2[%gi] : memref<?xi32>
      gpu.return
    }
  }
}
