// if / else-if / else chains on thread-dependent conditions whose arms all
// branch straight to one merge block, as cgeist writes them for an
// if-else-if ladder and for a `switch` whose default is `break`.
//   @ladder:        out[g] = g%4==0 ? 10*g : g%4==1 ? g+7 : g%4==2 ? -g : 3
//                   (merge block with an argument; every arm passes it)
//   @switch_break:  out[g] = 100 + g%3 for g%3 in {0, 1}, left alone
//                   otherwise (the last test falls through to the merge)
//   @nested_ladder: a ladder inside a divergent if, with stores in the
//                   arms and no block arguments:
//                   g odd:  out[g] = g%3==0 ? 1 : g%3==1 ? 2 : 3
//                   g even: out[g] = 4;  then out[g] += 1000 for all
module {
  gpu.module @m {
    gpu.func @ladder(%out: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c7 = arith.constant 7 : i32
      %c10 = arith.constant 10 : i32
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      cf.cond_br %inb, ^body, ^out
    ^body:
      %m = arith.remui %g, %c4 : i32
      %is0 = arith.cmpi eq, %m, %c0 : i32
      cf.cond_br %is0, ^a0, ^t1
    ^t1:
      %is1 = arith.cmpi eq, %m, %c1 : i32
      cf.cond_br %is1, ^a1, ^t2
    ^t2:
      %is2 = arith.cmpi eq, %m, %c2 : i32
      cf.cond_br %is2, ^a2, ^merge(%c3 : i32)
    ^a0:
      %v0 = arith.muli %g, %c10 : i32
      cf.br ^merge(%v0 : i32)
    ^a1:
      %v1 = arith.addi %g, %c7 : i32
      cf.br ^merge(%v1 : i32)
    ^a2:
      %v2 = arith.subi %c0, %g : i32
      cf.br ^merge(%v2 : i32)
    ^merge(%v: i32):
      memref.store %v, %out[%gi] : memref<?xi32>
      cf.br ^out
    ^out:
      gpu.return
    }

    gpu.func @switch_break(%out: memref<?xi32>, %n: i32) kernel {
      %c3 = arith.constant 3 : i32
      %c100 = arith.constant 100 : i32
      %c101 = arith.constant 101 : i32
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      cf.cond_br %inb, ^body, ^done
    ^body:
      %m = arith.remui %g, %c3 : i32
      cf.switch %m : i32, [
        default: ^done,
        0: ^case0,
        1: ^case1
      ]
    ^case0:
      memref.store %c100, %out[%gi] : memref<?xi32>
      cf.br ^done
    ^case1:
      memref.store %c101, %out[%gi] : memref<?xi32>
      cf.br ^done
    ^done:
      gpu.return
    }

    gpu.func @nested_ladder(%out: memref<?xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c1000 = arith.constant 1000 : i32
      %gi = gpu.global_id x
      %g = arith.index_cast %gi : index to i32
      %inb = arith.cmpi slt, %g, %n : i32
      scf.if %inb {
        %odd = arith.andi %g, %c1 : i32
        %isodd = arith.cmpi ne, %odd, %c0 : i32
        scf.if %isodd {
          %m = arith.remui %g, %c3 : i32
          %is0 = arith.cmpi eq, %m, %c0 : i32
          scf.execute_region {
            cf.cond_br %is0, ^a0, ^t1
          ^t1:
            %is1 = arith.cmpi eq, %m, %c1 : i32
            cf.cond_br %is1, ^a1, ^a2
          ^a0:
            memref.store %c1, %out[%gi] : memref<?xi32>
            cf.br ^merge
          ^a1:
            memref.store %c2, %out[%gi] : memref<?xi32>
            cf.br ^merge
          ^a2:
            memref.store %c3, %out[%gi] : memref<?xi32>
            cf.br ^merge
          ^merge:
            scf.yield
          }
        } else {
          memref.store %c4, %out[%gi] : memref<?xi32>
        }
        %v = memref.load %out[%gi] : memref<?xi32>
        %w = arith.addi %v, %c1000 : i32
        memref.store %w, %out[%gi] : memref<?xi32>
      }
      gpu.return
    }
  }
}
