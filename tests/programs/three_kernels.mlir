// One gpu.module of three kernels launched in turn, the first again last:
// on Vortex 3.0 each launch names its kernel (upstream's runtime finds it
// by name in the image), on 2.x the module's dispatcher picks it by id.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%out: memref<?xi32>, %v: i32) kernel {
      %t = gpu.thread_id x
      memref.store %v, %out[%t] : memref<?xi32>
      gpu.return
    }
    gpu.func @add_index(%out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %i = arith.index_cast %t : index to i32
      %v = memref.load %out[%t] : memref<?xi32>
      %w = arith.addi %v, %i : i32
      memref.store %w, %out[%t] : memref<?xi32>
      gpu.return
    }
    gpu.func @scale(%out: memref<?xi32>, %k: i32) kernel {
      %t = gpu.thread_id x
      %v = memref.load %out[%t] : memref<?xi32>
      %w = arith.muli %v, %k : i32
      memref.store %w, %out[%t] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [30,  33,  36,  39,  42,  45]
  // CHECK: [7,  7,  7,  7,  7,  7]
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %ten = arith.constant 10 : i32
    %three = arith.constant 3 : i32
    %seven = arith.constant 7 : i32
    %host = memref.alloc() : memref<6xi32>
    %dev = gpu.alloc () : memref<6xi32>
    %d = memref.cast %dev : memref<6xi32> to memref<?xi32>
    %u = memref.cast %host : memref<6xi32> to memref<*xi32>
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c6, %c1, %c1)
        args(%d : memref<?xi32>, %ten : i32)
    gpu.launch_func @kernels::@add_index blocks in (%c1, %c1, %c1) threads in (%c6, %c1, %c1)
        args(%d : memref<?xi32>)
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c6, %c1, %c1)
        args(%d : memref<?xi32>, %three : i32)
    gpu.memcpy %host, %dev : memref<6xi32>, memref<6xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c6, %c1, %c1)
        args(%d : memref<?xi32>, %seven : i32)
    gpu.memcpy %host, %dev : memref<6xi32>, memref<6xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %dev : memref<6xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
