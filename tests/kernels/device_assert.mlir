// cf.assert in a kernel: the threads whose index reaches %limit print the
// assertion's position and message, then trap; the others store their index.
module {
  gpu.module @m {
    gpu.func @checked(%out: memref<?xi32>, %limit: i32) kernel {
      %tid = gpu.thread_id x
      %i = arith.index_cast %tid : index to i32
      %ok = arith.cmpi slt, %i, %limit : i32
      cf.assert %ok, "index below the limit (100% sure)"
      memref.store %i, %out[%tid] : memref<?xi32>
      gpu.return
    }
    gpu.func @checked_at_call_site(%out: memref<?xi32>, %limit: i32) kernel {
      %tid = gpu.thread_id x
      %i = arith.index_cast %tid : index to i32
      %ok = arith.cmpi slt, %i, %limit : i32
      cf.assert %ok, "inlined from elsewhere" loc(callsite("helper.cu":7:3 at "main.cu":20:5))
      memref.store %i, %out[%tid] : memref<?xi32>
      gpu.return
    }
  }
}
