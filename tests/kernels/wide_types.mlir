// i64 and f64 arithmetic (f64 is soft-float on rv32imaf), i8/i16 loads and
// conversions:  q[i] = (a[i] * 3 + (a[i] >> 7) - b) / 5   (i64)
//               r[i] = x[i] * 0.5 + f64(small[i]) / 3.0    (f64)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wide(%a: memref<?xi64>, %b: i64, %q: memref<?xi64>, %x: memref<?xf64>,
                   %small: memref<?xi16>, %r: memref<?xf64>, %n: i32) kernel {
      %i = gpu.global_id x
      %i32 = arith.index_cast %i : index to i32
      %inb = arith.cmpi slt, %i32, %n : i32
      scf.if %inb {
        %c3 = arith.constant 3 : i64
        %c5 = arith.constant 5 : i64
        %c7 = arith.constant 7 : i64
        %av = memref.load %a[%i] : memref<?xi64>
        %m = arith.muli %av, %c3 : i64
        %sh = arith.shrsi %av, %c7 : i64
        %s = arith.addi %m, %sh : i64
        %d = arith.subi %s, %b : i64
        %qv = arith.divsi %d, %c5 : i64
        memref.store %qv, %q[%i] : memref<?xi64>
        %half = arith.constant 0.5 : f64
        %three = arith.constant 3.0 : f64
        %xv = memref.load %x[%i] : memref<?xf64>
        %sv = memref.load %small[%i] : memref<?xi16>
        %sf = arith.sitofp %sv : i16 to f64
        %t0 = arith.mulf %xv, %half : f64
        %t1 = arith.divf %sf, %three : f64
        %rv = arith.addf %t0, %t1 : f64
        memref.store %rv, %r[%i] : memref<?xf64>
      }
      gpu.return
    }
  }
}
