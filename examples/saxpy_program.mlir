// A whole program for `vxc run` (as for mlir-runner): the host fills x and
// y, launches saxpy on the device and prints y = 2 * x + y.
// Expected output: [1,  3,  5,  7,  9,  11,  13,  15]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%n: i32, %a: f32, %x: memref<?xf32>, %y: memref<?xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %i32 = arith.index_cast %i : index to i32
      %in = arith.cmpi slt, %i32, %n : i32
      scf.if %in {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %n = arith.constant 8 : i32
    %a = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %x = memref.alloc() : memref<8xf32>
    %y = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      %i32 = arith.index_cast %i : index to i32
      %f = arith.sitofp %i32 : i32 to f32
      memref.store %f, %x[%i] : memref<8xf32>
      memref.store %one, %y[%i] : memref<8xf32>
    }
    %xd = memref.cast %x : memref<8xf32> to memref<?xf32>
    %yd = memref.cast %y : memref<8xf32> to memref<?xf32>
    %xu = memref.cast %x : memref<8xf32> to memref<*xf32>
    %yu = memref.cast %y : memref<8xf32> to memref<*xf32>
    gpu.host_register %xu : memref<*xf32>
    gpu.host_register %yu : memref<*xf32>
    gpu.launch_func @kernels::@saxpy blocks in (%c2, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%n : i32, %a : f32, %xd : memref<?xf32>, %yd : memref<?xf32>)
    call @printMemrefF32(%yu) : (memref<*xf32>) -> ()
    return
  }
}
