// math dialect ops that RV32F has instructions for, and a private
// (per-thread) scratch buffer from a private attribution:
//   out[i] = sqrt(|x[i]|) + fma(x[i], 2, 1) + max(x[i], 0) + scratch-sum
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @math_private(%x: memref<?xf32>, %out: memref<?xf32>, %n: index)
        private(%scratch: memref<4xf32, #gpu.address_space<private>>) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %two = arith.constant 2.0 : f32
        %one = arith.constant 1.0 : f32
        %zero = arith.constant 0.0 : f32
        %v = memref.load %x[%i] : memref<?xf32>
        %a = math.absf %v : f32
        %s = math.sqrt %a : f32
        %f = math.fma %v, %two, %one : f32
        %m = arith.maximumf %v, %zero : f32
        scf.for %k = %c0 to %c4 step %c1 {
          %kf0 = arith.index_cast %k : index to i32
          %kf = arith.sitofp %kf0 : i32 to f32
          %e = arith.mulf %kf, %v : f32
          memref.store %e, %scratch[%k] : memref<4xf32, #gpu.address_space<private>>
        }
        %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
          %e = memref.load %scratch[%k] : memref<4xf32, #gpu.address_space<private>>
          %acc2 = arith.addf %acc, %e : f32
          scf.yield %acc2 : f32
        }
        %t0 = arith.addf %s, %f : f32
        %t1 = arith.addf %t0, %m : f32
        %t2 = arith.addf %t1, %sum : f32
        memref.store %t2, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
