// Per-block sum of in[] into out[blockIdx.x]: a tree reduction over a
// workgroup-memory global (address space 3), a barrier per step, and a
// thread-dependent (divergent) if at every step.  blockDim.x = 64.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" @partial : memref<64xi32, 3>
    gpu.func @block_sum(%in: memref<?xi32>, %out: memref<?xi32>, %n: index) kernel
        attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0 : i32
      %buf = memref.get_global @partial : memref<64xi32, 3>
      %tid = gpu.thread_id x
      %i = gpu.global_id x
      %inb = arith.cmpi ult, %i, %n : index
      %v = scf.if %inb -> (i32) {
        %x = memref.load %in[%i] : memref<?xi32>
        scf.yield %x : i32
      } else {
        scf.yield %zero : i32
      }
      memref.store %v, %buf[%tid] : memref<64xi32, 3>
      gpu.barrier
      %last = scf.while (%s = %c32) : (index) -> index {
        %more = arith.cmpi ugt, %s, %c0 : index
        scf.condition(%more) %s : index
      } do {
      ^bb0(%s: index):
        %active = arith.cmpi ult, %tid, %s : index
        scf.if %active {
          %o = arith.addi %tid, %s : index
          %a = memref.load %buf[%tid] : memref<64xi32, 3>
          %b = memref.load %buf[%o] : memref<64xi32, 3>
          %sum = arith.addi %a, %b : i32
          memref.store %sum, %buf[%tid] : memref<64xi32, 3>
        }
        gpu.barrier
        %h = arith.divui %s, %c2 : index
        scf.yield %h : index
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %buf[%c0] : memref<64xi32, 3>
        %bid = gpu.block_id x
        memref.store %r, %out[%bid] : memref<?xi32>
      }
      gpu.return
    }
  }
}
