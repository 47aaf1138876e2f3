// A whole program for `vxc run`: host code allocates, registers and copies
// memory, launches two kernels of one gpu.module and prints the results
// with MLIR's runner utilities; FileCheck checks the output.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @iota(%out: memref<?xi32>, %scale: i32) kernel {
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %t = gpu.thread_id x
      %base = arith.muli %b, %d : index
      %i = arith.addi %base, %t : index
      %v = arith.index_cast %i : index to i32
      %s = arith.muli %v, %scale : i32
      memref.store %s, %out[%i] : memref<?xi32>
      gpu.return
    }
    gpu.func @add_one(%buf: memref<?xi32>) kernel {
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %t = gpu.thread_id x
      %base = arith.muli %b, %d : index
      %i = arith.addi %base, %t : index
      %v = memref.load %buf[%i] : memref<?xi32>
      %one = arith.constant 1 : i32
      %w = arith.addi %v, %one : i32
      memref.store %w, %buf[%i] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [0,  3,  6,  9,  12,  15,  18,  21]
  // CHECK: [1,  4,  7,  10,  13,  16,  19,  22]
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %three = arith.constant 3 : i32
    %host = memref.alloc() : memref<8xi32>
    %h = memref.cast %host : memref<8xi32> to memref<?xi32>
    %dev = gpu.alloc () : memref<8xi32>
    %d = memref.cast %dev : memref<8xi32> to memref<?xi32>
    gpu.launch_func @kernels::@iota blocks in (%c2, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<?xi32>, %three : i32)
    gpu.memcpy %host, %dev : memref<8xi32>, memref<8xi32>
    %u = memref.cast %host : memref<8xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.launch_func @kernels::@add_one blocks in (%c2, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<?xi32>)
    gpu.memcpy %host, %dev : memref<8xi32>, memref<8xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %dev : memref<8xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
