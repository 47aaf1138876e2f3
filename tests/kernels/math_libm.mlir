// math ops with no RV32F instruction: LLVM intrinsics that the backend turns
// into libm calls (exp, log, sin, cos, pow) and ops upstream
// convert-math-to-libm turns into calls (tanh, atan2, erf), in f32 and f64:
//   y[i] = exp(x) + log(|x| + 1) + sin(x) * cos(x) + pow(|x|, 1.5)
//          + tanh(x) + atan2(x, 2) + erf(x)
//   d[i] = exp((double)x) + tanh((double)x)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @math_libm(%x: memref<?xf32>, %y: memref<?xf32>, %d: memref<?xf64>, %n: index) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %one = arith.constant 1.0 : f32
        %two = arith.constant 2.0 : f32
        %p = arith.constant 1.5 : f32
        %v = memref.load %x[%i] : memref<?xf32>
        %e = math.exp %v : f32
        %a = math.absf %v : f32
        %a1 = arith.addf %a, %one : f32
        %l = math.log %a1 : f32
        %s = math.sin %v : f32
        %c = math.cos %v : f32
        %sc = arith.mulf %s, %c : f32
        %pw = math.powf %a, %p : f32
        %th = math.tanh %v : f32
        %at = math.atan2 %v, %two : f32
        %er = math.erf %v : f32
        %t0 = arith.addf %e, %l : f32
        %t1 = arith.addf %t0, %sc : f32
        %t2 = arith.addf %t1, %pw : f32
        %t3 = arith.addf %t2, %th : f32
        %t4 = arith.addf %t3, %at : f32
        %t5 = arith.addf %t4, %er : f32
        memref.store %t5, %y[%i] : memref<?xf32>
        %vd = arith.extf %v : f32 to f64
        %ed = math.exp %vd : f64
        %thd = math.tanh %vd : f64
        %sd = arith.addf %ed, %thd : f64
        memref.store %sd, %d[%i] : memref<?xf64>
      }
      gpu.return
    }
  }
}
