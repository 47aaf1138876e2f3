// A whole program for `vxc run` that fills its buffers with the helpers
// MLIR's Vulkan and SPIR-V CPU runners export (fillResource*, fillF32Buffer*),
// which libvortexd_runtime exports too, then sums them on the device.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @sum(%a: memref<4xi8>, %b: memref<2x2xf32>, %c: memref<2x2x2xi32>, %out: memref<2x2x2xf32>) kernel {
      %i = gpu.thread_id x
      %j = gpu.thread_id y
      %k = gpu.thread_id z
      %x = memref.load %a[%i] : memref<4xi8>
      %y = memref.load %b[%i, %j] : memref<2x2xf32>
      %z = memref.load %c[%i, %j, %k] : memref<2x2x2xi32>
      %xf = arith.sitofp %x : i8 to f32
      %zf = arith.sitofp %z : i32 to f32
      %s0 = arith.addf %xf, %y : f32
      %s = arith.addf %s0, %zf : f32
      memref.store %s, %out[%i, %j, %k] : memref<2x2x2xf32>
      gpu.return
    }
  }

  // CHECK: {{\[}}[1006.5,   1006.5]
  // CHECK-COUNT-3: [1006.5,   1006.5]
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %a = memref.alloc() : memref<4xi8>
    %b = memref.alloc() : memref<2x2xf32>
    %c = memref.alloc() : memref<2x2x2xi32>
    %out = memref.alloc() : memref<2x2x2xf32>
    %a1 = memref.cast %a : memref<4xi8> to memref<?xi8>
    %b1 = memref.cast %b : memref<2x2xf32> to memref<?x?xf32>
    %c1d = memref.cast %c : memref<2x2x2xi32> to memref<?x?x?xi32>
    %o1 = memref.cast %out : memref<2x2x2xf32> to memref<?x?x?xf32>
    %six = arith.constant 6 : i8
    %half = arith.constant 0.5 : f32
    %thousand = arith.constant 1000 : i32
    %zero = arith.constant 0.0 : f32
    call @fillResource1DInt8(%a1, %six) : (memref<?xi8>, i8) -> ()
    call @fillF32Buffer2D(%b1, %half) : (memref<?x?xf32>, f32) -> ()
    call @fillResource3DInt(%c1d, %thousand) : (memref<?x?x?xi32>, i32) -> ()
    call @fillResource3DFloat(%o1, %zero) : (memref<?x?x?xf32>, f32) -> ()
    gpu.launch_func @k::@sum blocks in (%c1, %c1, %c1) threads in (%c2, %c2, %c2)
        args(%a : memref<4xi8>, %b : memref<2x2xf32>, %c : memref<2x2x2xi32>, %out : memref<2x2x2xf32>)
    %u = memref.cast %out : memref<2x2x2xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @fillResource1DInt8(memref<?xi8>, i8)
  func.func private @fillF32Buffer2D(memref<?x?xf32>, f32)
  func.func private @fillResource3DInt(memref<?x?x?xi32>, i32)
  func.func private @fillResource3DFloat(memref<?x?x?xf32>, f32)
  func.func private @printMemrefF32(memref<*xf32>)
}
