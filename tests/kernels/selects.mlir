// Thread-dependent selects and integer min/max.  RV32IMAF has no
// conditional move, so LLVM's RISC-V backend expands a select into a short
// branch; on a warp whose threads disagree that branch is divergent.
//   out[g] = (g % 3 == 0 ? g * 5 : g + 100) + max(g % 7, 3) + min(g, 20)
//            + (g % 2 == 0 ? 1 : -1) * umin(g, 9)
// @wide: the same on i64 and f64, whose RV32 expansion (variable shifts,
// comparisons of register pairs) also uses selects:
//   x = (i64)(g + 1) << (g % 40);  y = x > 2^20 ? x >> 7 : x * 3
//   out64[g] = max(y, 1000) - min(x, (i64)g * 100000)
//   outf[g]  = (g % 3 == 1 ? 0.5 * g : -(double)g)
module {
  gpu.module @m {
    gpu.func @selects(%out: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c5 = arith.constant 5 : i32
      %c7 = arith.constant 7 : i32
      %c9 = arith.constant 9 : i32
      %c20 = arith.constant 20 : i32
      %c100 = arith.constant 100 : i32
      %cm1 = arith.constant -1 : i32
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      scf.if %inb {
        %m3 = arith.remui %g, %c3 : i32
        %is0 = arith.cmpi eq, %m3, %c0 : i32
        %a = arith.muli %g, %c5 : i32
        %b = arith.addi %g, %c100 : i32
        %s = arith.select %is0, %a, %b : i32
        %m7 = arith.remui %g, %c7 : i32
        %mx = arith.maxsi %m7, %c3 : i32
        %mn = arith.minsi %g, %c20 : i32
        %m2 = arith.remui %g, %c2 : i32
        %even = arith.cmpi eq, %m2, %c0 : i32
        %sign = arith.select %even, %c1, %cm1 : i32
        %um = arith.minui %g, %c9 : i32
        %t = arith.muli %sign, %um : i32
        %r0 = arith.addi %s, %mx : i32
        %r1 = arith.addi %r0, %mn : i32
        %r2 = arith.addi %r1, %t : i32
        memref.store %r2, %out[%gi] : memref<?xi32>
      }
      gpu.return
    }

    gpu.func @wide(%out64: memref<?xi64>, %outf: memref<?xf64>, %n: i32) kernel {
      %c1 = arith.constant 1 : i64
      %c3 = arith.constant 3 : i64
      %c7 = arith.constant 7 : i64
      %c40 = arith.constant 40 : i64
      %c1000 = arith.constant 1000 : i64
      %c100000 = arith.constant 100000 : i64
      %big = arith.constant 1048576 : i64
      %three = arith.constant 3 : i32
      %one = arith.constant 1 : i32
      %half = arith.constant 0.5 : f64
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      scf.if %inb {
        %g64 = arith.extsi %g : i32 to i64
        %g1 = arith.addi %g64, %c1 : i64
        %sh = arith.remui %g64, %c40 : i64
        %x = arith.shli %g1, %sh : i64
        %isbig = arith.cmpi sgt, %x, %big : i64
        %xs = arith.shrsi %x, %c7 : i64
        %xm = arith.muli %x, %c3 : i64
        %y = arith.select %isbig, %xs, %xm : i64
        %mx = arith.maxsi %y, %c1000 : i64
        %gm = arith.muli %g64, %c100000 : i64
        %mn = arith.minsi %x, %gm : i64
        %r = arith.subi %mx, %mn : i64
        memref.store %r, %out64[%gi] : memref<?xi64>
        %m3 = arith.remui %g, %three : i32
        %is1 = arith.cmpi eq, %m3, %one : i32
        %gf = arith.sitofp %g : i32 to f64
        %a = arith.mulf %gf, %half : f64
        %b = arith.negf %gf : f64
        %f = arith.select %is1, %a, %b : f64
        memref.store %f, %outf[%gi] : memref<?xf64>
      }
      gpu.return
    }
  }
}
