// Control flow driven by thread-dependent data: an scf.while (Collatz steps),
// an scf.index_switch, a divergent scf.if with results, a cf.switch inside
// scf.execute_region and nested loops with an early-exit condition.
//   out[i] = steps(in[i]) * 1000 + sel(i % 4) + sum_{j<i%5} sum_{k<=j} (k odd ? k : -k)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @control(%in: memref<?xi32>, %out: memref<?xi32>, %n: index) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %c2 = arith.constant 2 : i32
        %c3 = arith.constant 3 : i32
        %c1000 = arith.constant 1000 : i32
        %v = memref.load %in[%i] : memref<?xi32>
        // Collatz steps of v (v >= 1)
        %steps:2 = scf.while (%x = %v, %s = %c0) : (i32, i32) -> (i32, i32) {
          %more = arith.cmpi ne, %x, %c1 : i32
          scf.condition(%more) %x, %s : i32, i32
        } do {
        ^bb0(%x: i32, %s: i32):
          %odd = arith.andi %x, %c1 : i32
          %isodd = arith.cmpi ne, %odd, %c0 : i32
          %nx = scf.if %isodd -> (i32) {
            %t = arith.muli %x, %c3 : i32
            %t1 = arith.addi %t, %c1 : i32
            scf.yield %t1 : i32
          } else {
            %h = arith.divui %x, %c2 : i32
            scf.yield %h : i32
          }
          %s1 = arith.addi %s, %c1 : i32
          scf.yield %nx, %s1 : i32, i32
        }
        %c4 = arith.constant 4 : index
        %m4 = arith.remui %i, %c4 : index
        %sel = scf.index_switch %m4 -> i32
        case 0 {
          %a = arith.constant 7 : i32
          scf.yield %a : i32
        }
        case 1 {
          %a = scf.execute_region -> i32 {
            %i32 = arith.index_cast %i : index to i32
            %r = arith.remui %i32, %c3 : i32
            cf.switch %r : i32, [
              default: ^d,
              0: ^z,
              1: ^o
            ]
          ^z:
            %z = arith.constant 100 : i32
            cf.br ^done(%z : i32)
          ^o:
            %o = arith.constant 200 : i32
            cf.br ^done(%o : i32)
          ^d:
            %dd = arith.constant 300 : i32
            cf.br ^done(%dd : i32)
          ^done(%res: i32):
            scf.yield %res : i32
          }
          scf.yield %a : i32
        }
        default {
          %a = arith.constant 11 : i32
          scf.yield %a : i32
        }
        %ci0 = arith.constant 0 : index
        %ci1 = arith.constant 1 : index
        %c5 = arith.constant 5 : index
        %m5 = arith.remui %i, %c5 : index
        %nest = scf.for %j = %ci0 to %m5 step %ci1 iter_args(%acc = %c0) -> (i32) {
          %jp = arith.addi %j, %ci1 : index
          %inner = scf.for %k = %ci0 to %jp step %ci1 iter_args(%a2 = %acc) -> (i32) {
            %k32 = arith.index_cast %k : index to i32
            %kodd = arith.andi %k32, %c1 : i32
            %isk = arith.cmpi ne, %kodd, %c0 : i32
            %neg = arith.subi %c0, %k32 : i32
            %term = arith.select %isk, %k32, %neg : i32
            %a3 = arith.addi %a2, %term : i32
            scf.yield %a3 : i32
          }
          scf.yield %inner : i32
        }
        %st = arith.muli %steps#1, %c1000 : i32
        %r0 = arith.addi %st, %sel : i32
        %r1 = arith.addi %r0, %nest : i32
        memref.store %r1, %out[%i] : memref<?xi32>
      }
      gpu.return
    }
  }
}
