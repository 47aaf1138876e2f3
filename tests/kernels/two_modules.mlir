// Two gpu.modules that both define a kernel @apply and a helper @op (with
// different bodies), as gpu-kernel-outlining or separate translation units
// produce.  Both kernels are compiled, each calling its own helper, and are
// named the way gpu.launch_func refers to them: "add::apply", "mul::apply".
// @scale has a name of its own and keeps it.
//   add::apply: o[i] = i + 1      mul::apply: o[i] = 3 * i      scale: o[i] = 5 * i
module attributes {gpu.container_module} {
  gpu.module @add {
    func.func @op(%a: i32) -> i32 {
      %c = arith.constant 1 : i32
      %r = arith.addi %a, %c : i32
      return %r : i32
    }
    gpu.func @apply(%o: memref<?xi32>, %n: index) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = arith.index_cast %i : index to i32
        %r = func.call @op(%v) : (i32) -> i32
        memref.store %r, %o[%i] : memref<?xi32>
      }
      gpu.return
    }
  }
  gpu.module @mul {
    func.func @op(%a: i32) -> i32 {
      %c = arith.constant 3 : i32
      %r = arith.muli %a, %c : i32
      return %r : i32
    }
    gpu.func @apply(%o: memref<?xi32>, %n: index) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = arith.index_cast %i : index to i32
        %r = func.call @op(%v) : (i32) -> i32
        memref.store %r, %o[%i] : memref<?xi32>
      }
      gpu.return
    }
    gpu.func @scale(%o: memref<?xi32>, %n: index) kernel {
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = arith.index_cast %i : index to i32
        %c5 = arith.constant 5 : i32
        %r = arith.muli %v, %c5 : i32
        memref.store %r, %o[%i] : memref<?xi32>
      }
      gpu.return
    }
  }
}
