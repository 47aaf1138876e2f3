// A whole program for `vxc run` whose host side uses the async dialect:
// two async.execute regions fill device buffers concurrently, a third one,
// after both, launches a kernel that combines them; async.await joins.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @combine(%a: memref<?xi32>, %b: memref<?xi32>, %out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %x = memref.load %a[%t] : memref<?xi32>
      %y = memref.load %b[%t] : memref<?xi32>
      %two = arith.constant 2 : i32
      %y2 = arith.muli %y, %two : i32
      %s = arith.addi %x, %y2 : i32
      memref.store %s, %out[%t] : memref<?xi32>
      gpu.return
    }
  }

  // CHECK: [7,  7,  7,  7,  7,  7]
  func.func @main() {
    %c1 = arith.constant 1 : index
    %n = arith.constant 6 : index
    %one = arith.constant 1 : i32
    %three = arith.constant 3 : i32
    %ha = memref.alloc(%n) : memref<?xi32>
    %hb = memref.alloc(%n) : memref<?xi32>
    %hout = memref.alloc(%n) : memref<?xi32>
    %ua = memref.cast %ha : memref<?xi32> to memref<*xi32>
    %ub = memref.cast %hb : memref<?xi32> to memref<*xi32>
    %uout = memref.cast %hout : memref<?xi32> to memref<*xi32>
    gpu.host_register %ua : memref<*xi32>
    gpu.host_register %ub : memref<*xi32>
    gpu.host_register %uout : memref<*xi32>
    call @fillI32Buffer(%ha, %one) : (memref<?xi32>, i32) -> ()
    call @fillI32Buffer(%hb, %three) : (memref<?xi32>, i32) -> ()
    %ta, %fa = async.execute () -> !async.value<memref<?xi32>> {
      %da = gpu.alloc(%n) : memref<?xi32>
      gpu.memcpy %da, %ha : memref<?xi32>, memref<?xi32>
      async.yield %da : memref<?xi32>
    }
    %tb, %fb = async.execute () -> !async.value<memref<?xi32>> {
      %db = gpu.alloc(%n) : memref<?xi32>
      gpu.memcpy %db, %hb : memref<?xi32>, memref<?xi32>
      async.yield %db : memref<?xi32>
    }
    %tc = async.execute [%ta, %tb] (%fa as %da : !async.value<memref<?xi32>>,
                                    %fb as %db : !async.value<memref<?xi32>>) {
      gpu.launch_func @k::@combine blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
          args(%da : memref<?xi32>, %db : memref<?xi32>, %hout : memref<?xi32>)
      async.yield
    }
    async.await %tc : !async.token
    call @printMemrefI32(%uout) : (memref<*xi32>) -> ()
    return
  }
  func.func private @fillI32Buffer(memref<?xi32>, i32)
  func.func private @printMemrefI32(memref<*xi32>)
}
