// Two modules, each with a counter module variable (one starting at 0, one
// at 100), launched in turn three times: each launch increments its
// module's counter and writes the new value.  A module's variables start
// at their initializers and keep their values from one launch of the
// module to the next, whatever else runs in between.
module attributes {gpu.container_module} {
  gpu.module @a {
    memref.global "private" @counter : memref<1xi32> = dense<0>
    gpu.func @bump(%out: memref<?xi32>, %at: index) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      %g = memref.get_global @counter : memref<1xi32>
      %v = memref.load %g[%c0] : memref<1xi32>
      %w = arith.addi %v, %one : i32
      memref.store %w, %g[%c0] : memref<1xi32>
      memref.store %w, %out[%at] : memref<?xi32>
      gpu.return
    }
  }
  gpu.module @b {
    memref.global "private" @counter : memref<1xi32> = dense<100>
    gpu.func @bump(%out: memref<?xi32>, %at: index) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      %g = memref.get_global @counter : memref<1xi32>
      %v = memref.load %g[%c0] : memref<1xi32>
      %w = arith.addi %v, %one : i32
      memref.store %w, %g[%c0] : memref<1xi32>
      memref.store %w, %out[%at] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [1,  101,  2,  102,  3,  103]
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %host = memref.alloc() : memref<6xi32>
    %dev = gpu.alloc () : memref<6xi32>
    %d = memref.cast %dev : memref<6xi32> to memref<?xi32>
    scf.for %i = %c0 to %c3 step %c1 {
      %at = arith.muli %i, %c2 : index
      %at1 = arith.addi %at, %c1 : index
      gpu.launch_func @a::@bump blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%d : memref<?xi32>, %at : index)
      gpu.launch_func @b::@bump blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%d : memref<?xi32>, %at1 : index)
    }
    gpu.memcpy %host, %dev : memref<6xi32>, memref<6xi32>
    %u = memref.cast %host : memref<6xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %dev : memref<6xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
