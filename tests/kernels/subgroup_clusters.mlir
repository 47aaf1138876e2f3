// gpu.subgroup_reduce over clusters (needs a warp of at least 4 threads).
// g = global id, l = lane, v = 10 g + 1:
//   out[2g]   = add over the lanes of l's cluster of 2 adjacent lanes
//   out[2g+1] = mul over the lanes with l's parity in l's cluster of 4
//               (cluster size 2, stride 2), of (v % 5 + 1)
module attributes {gpu.container_module} {
  gpu.module @sg {
    gpu.func @clusters(%out: memref<?xi32>) kernel {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %i1 = arith.constant 1 : i32
      %i5 = arith.constant 5 : i32
      %i10 = arith.constant 10 : i32
      %g = gpu.global_id x
      %gi = arith.index_cast %g : index to i32
      %v0 = arith.muli %gi, %i10 : i32
      %v = arith.addi %v0, %i1 : i32
      %a = gpu.subgroup_reduce add %v cluster(size = 2) : (i32) -> i32
      %m5 = arith.remui %v, %i5 : i32
      %m = arith.addi %m5, %i1 : i32
      %p = gpu.subgroup_reduce mul %m cluster(size = 2, stride = 2) : (i32) -> i32
      %b = arith.muli %g, %c2 : index
      %b1 = arith.addi %b, %c1 : index
      memref.store %a, %out[%b] : memref<?xi32>
      memref.store %p, %out[%b1] : memref<?xi32>
      gpu.return
    }
  }
}
