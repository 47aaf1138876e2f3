// gpu.printf with an index, a narrow integer and a float (C's promotions
// apply): each of the block's threads prints one line,
//   "thread T of 3: 1.500000 and 7"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @say() kernel {
      %t = gpu.thread_id x
      %n = gpu.block_dim x
      %f = arith.constant 1.5 : f32
      %s = arith.constant 7 : i16
      gpu.printf "thread %lld of %lld: %f and %d\n", %t, %n, %f, %s : index, index, f32, i16
      gpu.return
    }
  }
}
