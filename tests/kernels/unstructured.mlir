// Unstructured control flow with thread-dependent branches, written with cf
// ops directly in the kernel: an early return for out-of-range threads (two
// gpu.return exits), a cf loop whose trip count depends on the thread, an
// if-then that forwards a block argument, and one branch on a kernel
// argument that must stay plain.
//   out[g] = (sum_{k < g % 7} k + (g odd ? 1000 : 0)) * (n > 100 ? -1 : 1)
// for every g < n; the rest of out is not written.
// @switch_exits: a cf.switch on a thread-dependent value whose cases take
// block arguments, in an scf.execute_region with three scf.yield exits:
//   out[g] = g % 5 == 0 ? g + 10 : g % 5 == 2 ? g - 3 * (g % 5) : 3 * (g % 5)
module {
  gpu.module @m {
    gpu.func @unstructured(%out: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c7 = arith.constant 7 : i32
      %c100 = arith.constant 100 : i32
      %c1000 = arith.constant 1000 : i32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %gi = arith.addi %base, %tid : index
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      cf.cond_br %inb, ^body, ^out
    ^body:
      %m = arith.remui %g, %c7 : i32
      cf.br ^head(%c0, %c0 : i32, i32)
    ^head(%k: i32, %s: i32):
      %more = arith.cmpi ult, %k, %m : i32
      cf.cond_br %more, ^step, ^after
    ^step:
      %s2 = arith.addi %s, %k : i32
      %k2 = arith.addi %k, %c1 : i32
      cf.br ^head(%k2, %s2 : i32, i32)
    ^after:
      %odd = arith.andi %g, %c1 : i32
      %isodd = arith.cmpi ne, %odd, %c0 : i32
      cf.cond_br %isodd, ^addk, ^store(%s : i32)
    ^addk:
      %s3 = arith.addi %s, %c1000 : i32
      cf.br ^store(%s3 : i32)
    ^store(%v: i32):
      %big = arith.cmpi sgt, %n, %c100 : i32
      cf.cond_br %big, ^neg, ^write(%v : i32)
    ^neg:
      %nv = arith.subi %c0, %v : i32
      cf.br ^write(%nv : i32)
    ^write(%x: i32):
      memref.store %x, %out[%gi] : memref<?xi32>
      gpu.return
    ^out:
      gpu.return
    }

    gpu.func @switch_exits(%out: memref<?xi32>, %n: i32) kernel {
      %c3 = arith.constant 3 : i32
      %c5 = arith.constant 5 : i32
      %c10 = arith.constant 10 : i32
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      scf.if %inb {
        %r = scf.execute_region -> i32 {
          %q = arith.remui %g, %c5 : i32
          %q3 = arith.muli %q, %c3 : i32
          cf.switch %q : i32, [
            default: ^d(%q3 : i32),
            0: ^a(%g : i32),
            2: ^b(%g, %q3 : i32, i32)
          ]
        ^a(%x: i32):
          %y = arith.addi %x, %c10 : i32
          scf.yield %y : i32
        ^b(%x2: i32, %z: i32):
          %w = arith.subi %x2, %z : i32
          scf.yield %w : i32
        ^d(%v: i32):
          scf.yield %v : i32
        }
        memref.store %r, %out[%gi] : memref<?xi32>
      }
      gpu.return
    }
  }
}
