// Subgroup and workgroup collectives.  Subgroup = warp of W threads (the
// compile's warp size); blocks need not be a multiple of W.  g = global id,
// t = thread id in the block (x only), l = t % W.
//   @ids:      ids[4g..4g+3] = lane_id, subgroup_id, subgroup_size, num_subgroups
//   @shuffles: v = 10 g + 1; per thread 8 words:
//              xor 1, up 1, down 2, idx 0 (value, valid) with width W;
//              f32 xor 2 of (v / 2), width min(4, W) in two words (a width
//              above the warp is refused or trapped)
//   @reduces:  r[3g] = subgroup add of v; r[3g+1] = subgroup maxsi of (v % 7);
//              r[3g+2] = in an if on odd g, the add over the odd lanes only
//              (even threads write -1)
//   @block:    b[3g] = all_reduce add of (float)t (bits); b[3g+1] = all_reduce
//              max via a region of (t * 7) % 11; b[3g+2] = all_reduce mul of
//              (t % 3 + 1), i32, not uniform
module attributes {gpu.container_module} {
  gpu.module @sg {
    gpu.func @ids(%out: memref<?xi32>) kernel {
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %g = gpu.global_id x
      %l = gpu.lane_id
      %s = gpu.subgroup_id : index
      %w = gpu.subgroup_size : index
      %n = gpu.num_subgroups : index
      %b = arith.muli %g, %c4 : index
      %b1 = arith.addi %b, %c1 : index
      %b2 = arith.addi %b, %c2 : index
      %b3 = arith.addi %b, %c3 : index
      %li = arith.index_cast %l : index to i32
      %si = arith.index_cast %s : index to i32
      %wi = arith.index_cast %w : index to i32
      %ni = arith.index_cast %n : index to i32
      memref.store %li, %out[%b] : memref<?xi32>
      memref.store %si, %out[%b1] : memref<?xi32>
      memref.store %wi, %out[%b2] : memref<?xi32>
      memref.store %ni, %out[%b3] : memref<?xi32>
      gpu.return
    }

    gpu.func @shuffles(%out: memref<?xi32>, %fout: memref<?xf32>) kernel {
      %c8 = arith.constant 8 : index
      %c2 = arith.constant 2 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %i4 = arith.constant 4 : i32
      %i10 = arith.constant 10 : i32
      %half = arith.constant 0.5 : f32
      %g = gpu.global_id x
      %gi = arith.index_cast %g : index to i32
      %v0 = arith.muli %gi, %i10 : i32
      %v = arith.addi %v0, %i1 : i32
      %wi = gpu.subgroup_size : index
      %w = arith.index_cast %wi : index to i32
      %x, %xv = gpu.shuffle xor %v, %i1, %w : i32
      %u, %uv = gpu.shuffle up %v, %i1, %w : i32
      %d, %dv = gpu.shuffle down %v, %i2, %w : i32
      %k, %kv = gpu.shuffle idx %v, %i0, %w : i32
      %base = arith.muli %g, %c8 : index
      %xb = arith.extui %xv : i1 to i32
      %ub = arith.extui %uv : i1 to i32
      %db = arith.extui %dv : i1 to i32
      %kb = arith.extui %kv : i1 to i32
      %c1 = arith.constant 1 : index
      %p1 = arith.addi %base, %c1 : index
      %p2 = arith.addi %p1, %c1 : index
      %p3 = arith.addi %p2, %c1 : index
      %p4 = arith.addi %p3, %c1 : index
      %p5 = arith.addi %p4, %c1 : index
      %p6 = arith.addi %p5, %c1 : index
      %p7 = arith.addi %p6, %c1 : index
      memref.store %x, %out[%base] : memref<?xi32>
      memref.store %xb, %out[%p1] : memref<?xi32>
      memref.store %u, %out[%p2] : memref<?xi32>
      memref.store %ub, %out[%p3] : memref<?xi32>
      memref.store %d, %out[%p4] : memref<?xi32>
      memref.store %db, %out[%p5] : memref<?xi32>
      memref.store %k, %out[%p6] : memref<?xi32>
      memref.store %kb, %out[%p7] : memref<?xi32>
      %vf = arith.sitofp %v : i32 to f32
      %hf = arith.mulf %vf, %half : f32
      %w4 = arith.minui %i4, %w : i32
      %f, %fv = gpu.shuffle xor %hf, %i2, %w4 : f32
      %fb = arith.extui %fv : i1 to i32
      %fbf = arith.sitofp %fb : i32 to f32
      %fo = arith.muli %g, %c2 : index
      %fo1 = arith.addi %fo, %c1 : index
      memref.store %f, %fout[%fo] : memref<?xf32>
      memref.store %fbf, %fout[%fo1] : memref<?xf32>
      gpu.return
    }

    gpu.func @reduces(%out: memref<?xi32>) kernel {
      %c3 = arith.constant 3 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i7 = arith.constant 7 : i32
      %i10 = arith.constant 10 : i32
      %m1 = arith.constant -1 : i32
      %g = gpu.global_id x
      %gi = arith.index_cast %g : index to i32
      %v0 = arith.muli %gi, %i10 : i32
      %v = arith.addi %v0, %i1 : i32
      %sum = gpu.subgroup_reduce add %v : (i32) -> i32
      %m = arith.remui %v, %i7 : i32
      %mx = gpu.subgroup_reduce maxsi %m : (i32) -> i32
      %b = arith.muli %g, %c3 : index
      %b1 = arith.addi %b, %c1 : index
      %b2 = arith.addi %b, %c2 : index
      memref.store %sum, %out[%b] : memref<?xi32>
      memref.store %mx, %out[%b1] : memref<?xi32>
      %odd = arith.andi %gi, %i1 : i32
      %isodd = arith.cmpi ne, %odd, %i0 : i32
      scf.if %isodd {
        %os = gpu.subgroup_reduce add %v : (i32) -> i32
        memref.store %os, %out[%b2] : memref<?xi32>
      } else {
        memref.store %m1, %out[%b2] : memref<?xi32>
      }
      gpu.return
    }

    gpu.func @block(%out: memref<?xi32>) kernel {
      %c3 = arith.constant 3 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %i7 = arith.constant 7 : i32
      %i11 = arith.constant 11 : i32
      %g = gpu.global_id x
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      %s = gpu.all_reduce add %tf uniform {} : (f32) -> f32
      %t7 = arith.muli %ti, %i7 : i32
      %q = arith.remui %t7, %i11 : i32
      %mx = gpu.all_reduce %q uniform {
      ^bb0(%a: i32, %bb: i32):
        %r = arith.maxsi %a, %bb : i32
        gpu.yield %r : i32
      } : (i32) -> i32
      %i1 = arith.constant 1 : i32
      %i3 = arith.constant 3 : i32
      %tm = arith.remui %ti, %i3 : i32
      %tp = arith.addi %tm, %i1 : i32
      %pi = gpu.all_reduce mul %tp {} : (i32) -> i32
      %b = arith.muli %g, %c3 : index
      %b1 = arith.addi %b, %c1 : index
      %b2 = arith.addi %b, %c2 : index
      %sb = arith.bitcast %s : f32 to i32
      memref.store %sb, %out[%b] : memref<?xi32>
      memref.store %mx, %out[%b1] : memref<?xi32>
      memref.store %pi, %out[%b2] : memref<?xi32>
      gpu.return
    }
  }
}
