// gpu.shuffle with a width the host passes: 4 (the warp) works; then 13,
// as upstream's CUDA shuffle test takes it from the block size, is larger
// than the warp and stops the kernel at the op, naming it.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @swap_pairs(%out: memref<?xi32>, %width: i32) kernel {
      %t = gpu.thread_id x
      %v = arith.index_cast %t : index to i32
      %one = arith.constant 1 : i32
      %r, %ok = gpu.shuffle xor %v, %one, %width : i32
      memref.store %r, %out[%t] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [1,  0,  3,  2]
  // CHECK: shuffle_width.mlir:10:17: assertion failed: gpu.shuffle width larger than the warp (4 threads
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c13 = arith.constant 13 : index
    %w4 = arith.constant 4 : i32
    %w13 = arith.constant 13 : i32
    %host = memref.alloc() : memref<4xi32>
    %dev = gpu.alloc () : memref<13xi32>
    %d = memref.cast %dev : memref<13xi32> to memref<?xi32>
    gpu.launch_func @k::@swap_pairs blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<?xi32>, %w4 : i32)
    %d4 = memref.subview %dev[0] [4] [1] : memref<13xi32> to memref<4xi32, strided<[1]>>
    memref.copy %d4, %host : memref<4xi32, strided<[1]>> to memref<4xi32>
    %u = memref.cast %host : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.launch_func @k::@swap_pairs blocks in (%c1, %c1, %c1) threads in (%c13, %c1, %c1)
        args(%d : memref<?xi32>, %w13 : i32)
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
