// Workgroup globals the way cgeist writes them: `extern __shared__ float
// s[]` is a one-element uninitialized address-space-3 global indexed past
// its size; `__shared__ float tile[8]` a static one.  The extern one is the
// dynamic area, after every static buffer; a one-element uninitialized
// global that really is one variable (`__shared__ int count`) must still
// get storage of its own when the launch asks for no dynamic bytes.
//   @reverse_with_tile: out[g] = in[block start + B-1-t] + 2 * in[block start + t % 8]
//                       (B = blockDim.x >= 8; dynamic bytes = 4 B)
//   @one_shared_var:    out[g] = 5 + blockIdx.x + t   (dynamic bytes = 0)
module attributes {gpu.container_module} {
  gpu.module @__polygeist_gpu_module {
    memref.global "private" @shared_mem : memref<1xf32, 3> = uninitialized
    memref.global "private" @tile : memref<8xf32, 3> = uninitialized
    memref.global "private" @count : memref<1xi32, 3> = uninitialized
    gpu.func @reverse_with_tile(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %two = arith.constant 2.0 : f32
      %s = memref.get_global @shared_mem : memref<1xf32, 3>
      %t = memref.get_global @tile : memref<8xf32, 3>
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %g = gpu.global_id x
      %v = memref.load %in[%g] : memref<?xf32>
      memref.store %v, %s[%tid] : memref<1xf32, 3>
      %small = arith.cmpi ult, %tid, %c8 : index
      scf.if %small {
        %d = arith.mulf %v, %two : f32
        memref.store %d, %t[%tid] : memref<8xf32, 3>
      }
      gpu.barrier
      %last = arith.subi %bdim, %c1 : index
      %r = arith.subi %last, %tid : index
      %w = memref.load %s[%r] : memref<1xf32, 3>
      %m = arith.remui %tid, %c8 : index
      %x = memref.load %t[%m] : memref<8xf32, 3>
      %res = arith.addf %w, %x : f32
      memref.store %res, %out[%g] : memref<?xf32>
      gpu.return
    }
    gpu.func @one_shared_var(%out: memref<?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c5 = arith.constant 5 : i32
      %cnt = memref.get_global @count : memref<1xi32, 3>
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %g = gpu.global_id x
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %b32 = arith.index_cast %bid : index to i32
        %v = arith.addi %b32, %c5 : i32
        memref.store %v, %cnt[%c0] : memref<1xi32, 3>
      }
      gpu.barrier
      %c = memref.load %cnt[%c0] : memref<1xi32, 3>
      %t32 = arith.index_cast %tid : index to i32
      %o = arith.addi %c, %t32 : i32
      memref.store %o, %out[%g] : memref<?xi32>
      gpu.return
    }
  }
}
