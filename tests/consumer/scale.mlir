// The device half of host_consumer.c: a kernel and the host function that
// launches it, called from C (llvm.emit_c_interface: _mlir_ciface_scale).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale_kernel(%buf: memref<?xf32>, %factor: f32) kernel {
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %t = gpu.thread_id x
      %base = arith.muli %b, %d : index
      %i = arith.addi %base, %t : index
      %c0 = arith.constant 0 : index
      %n = memref.dim %buf, %c0 : memref<?xf32>
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %buf[%i] : memref<?xf32>
        %w = arith.mulf %v, %factor : f32
        memref.store %w, %buf[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  // buf[i] *= factor on the device, for every i
  func.func @scale(%buf: memref<?xf32>, %factor: f32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n = memref.dim %buf, %c0 : memref<?xf32>
    %c3 = arith.constant 3 : index
    %n3 = arith.addi %n, %c3 : index
    %blocks = arith.divui %n3, %c4 : index
    %u = memref.cast %buf : memref<?xf32> to memref<*xf32>
    gpu.host_register %u : memref<*xf32>
    gpu.launch_func @kernels::@scale_kernel blocks in (%blocks, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%buf : memref<?xf32>, %factor : f32)
    gpu.host_unregister %u : memref<*xf32>
    return
  }
}
