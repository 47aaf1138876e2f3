// A writable module variable with an initializer (CUDA's `__device__ int
// t = 100;`), read by every thread of a kernel: the device must start it at
// its initializer, not at zero.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" @t : memref<1xi32> = dense<100>
    gpu.func @read_t(%out: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %g = memref.get_global @t : memref<1xi32>
      %v = memref.load %g[%c0] : memref<1xi32>
      %i = arith.index_cast %tid : index to i32
      %s = arith.addi %v, %i : i32
      memref.store %s, %out[%tid] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [100,  101,  102,  103]
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %host = memref.alloc() : memref<4xi32>
    %dev = gpu.alloc () : memref<4xi32>
    %d = memref.cast %dev : memref<4xi32> to memref<?xi32>
    gpu.launch_func @kernels::@read_t blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<?xi32>)
    gpu.memcpy %host, %dev : memref<4xi32>, memref<4xi32>
    %u = memref.cast %host : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %dev : memref<4xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
