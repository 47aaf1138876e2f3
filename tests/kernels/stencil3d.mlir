// 7-point stencil on an nx*ny*nz volume (x fastest), interior points only:
// out = c0*in[p] + c1*(sum of the six neighbours).  3-D grid and 3-D block.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @stencil7(%in: memref<?xf32>, %out: memref<?xf32>, %nx: index, %ny: index,
                       %nz: index, %c0: f32, %c1: f32) kernel {
      %one = arith.constant 1 : index
      %x = gpu.global_id x
      %y = gpu.global_id y
      %z = gpu.global_id z
      %nx1 = arith.subi %nx, %one : index
      %ny1 = arith.subi %ny, %one : index
      %nz1 = arith.subi %nz, %one : index
      %x0 = arith.cmpi uge, %x, %one : index
      %x1 = arith.cmpi ult, %x, %nx1 : index
      %y0 = arith.cmpi uge, %y, %one : index
      %y1 = arith.cmpi ult, %y, %ny1 : index
      %z0 = arith.cmpi uge, %z, %one : index
      %z1 = arith.cmpi ult, %z, %nz1 : index
      %a = arith.andi %x0, %x1 : i1
      %b = arith.andi %y0, %y1 : i1
      %cz = arith.andi %z0, %z1 : i1
      %ab = arith.andi %a, %b : i1
      %all = arith.andi %ab, %cz : i1
      scf.if %all {
        %sxy = arith.muli %nx, %ny : index
        %pz = arith.muli %z, %sxy : index
        %py = arith.muli %y, %nx : index
        %pzy = arith.addi %pz, %py : index
        %p = arith.addi %pzy, %x : index
        %pxm = arith.subi %p, %one : index
        %pxp = arith.addi %p, %one : index
        %pym = arith.subi %p, %nx : index
        %pyp = arith.addi %p, %nx : index
        %pzm = arith.subi %p, %sxy : index
        %pzp = arith.addi %p, %sxy : index
        %v = memref.load %in[%p] : memref<?xf32>
        %v1 = memref.load %in[%pxm] : memref<?xf32>
        %v2 = memref.load %in[%pxp] : memref<?xf32>
        %v3 = memref.load %in[%pym] : memref<?xf32>
        %v4 = memref.load %in[%pyp] : memref<?xf32>
        %v5 = memref.load %in[%pzm] : memref<?xf32>
        %v6 = memref.load %in[%pzp] : memref<?xf32>
        %s1 = arith.addf %v1, %v2 : f32
        %s2 = arith.addf %v3, %v4 : f32
        %s3 = arith.addf %v5, %v6 : f32
        %s12 = arith.addf %s1, %s2 : f32
        %s = arith.addf %s12, %s3 : f32
        %t0 = arith.mulf %c0, %v : f32
        %t1 = arith.mulf %c1, %s : f32
        %r = arith.addf %t0, %t1 : f32
        memref.store %r, %out[%p] : memref<?xf32>
      }
      gpu.return
    }
  }
}
