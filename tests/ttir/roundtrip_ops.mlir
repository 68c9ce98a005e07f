module {
  tt.func public @add_kernel(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/u/x/01-vector-add.py":28:0), %arg1: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %arg2: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %arg3: i32 {tt.divisibility = 16 : i32}) attributes {noinline = false} {
    %c1024_i32 = arith.constant 1024 : i32 loc(#loc1)
    %0 = tt.get_program_id x : i32 loc(#loc2)
    %1 = arith.muli %0, %c1024_i32 : i32 loc(#loc3)
    %2 = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32> loc(#loc4)
    %3 = tt.splat %1 : i32 -> tensor<1024xi32> loc(#loc5)
    %4 = arith.addi %3, %2 : tensor<1024xi32> loc(#loc5)
    %5 = tt.splat %arg3 : i32 -> tensor<1024xi32> loc(#loc6)
    %6 = arith.cmpi slt, %4, %5 : tensor<1024xi32> loc(#loc6)
    %7 = tt.splat %arg0 : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>> loc(#loc7)
    %8 = tt.addptr %7, %4 : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32> loc(#loc7)
    %9 = tt.load %8, %6 : tensor<1024x!tt.ptr<f32>> loc(#loc8)
    %10 = tt.splat %arg1 : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %11 = tt.addptr %10, %4 : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %12 = tt.load %11, %6 cacheModifier = cg evictionPolicy = evict_last {isVolatile = true} : tensor<1024x!tt.ptr<f32>>
    %13 = arith.addf %9, %12 : tensor<1024xf32>
    %x = "tt.reduce"(%13) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    }) : (tensor<1024xf32>) -> f32
    %14 = tt.splat %arg2 : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %15 = tt.addptr %14, %4 : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    tt.store %15, %13, %6 : tensor<1024x!tt.ptr<f32>>
    %r = tt.atomic_rmw fadd, acq_rel, gpu, %15, %13, %6 : (tensor<1024x!tt.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>) -> tensor<1024xf32>
    %c = arith.constant 0 : i64
    %c0 = arith.constant 0 : i32
    %bp = tt.make_tensor_ptr %arg0, [%c, %c], [%c, %c], [%c0, %c0] {order = array<i32: 1, 0>} : <tensor<64x64xf32>>
    %bp2 = tt.advance %bp, [%c0, %c0] : <tensor<64x64xf32>>
    %ld = tt.load %bp2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf32>>
    %d = tt.dot %ld, %ld, %ld, inputPrecision = tf32 : tensor<64x64xf32> * tensor<64x64xf32> -> tensor<64x64xf32>
    %sel = arith.select %6, %9, %12 : tensor<1024xi1>, tensor<1024xf32>
    %e = arith.extf %13 : tensor<1024xf32> to tensor<1024xf64>
    %pid = tt.get_program_id y : i32
    tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %13 : tensor<1024xf32>
    tt.assert %6, "oops" : tensor<1024xi1>
    %cond = arith.cmpi sge, %pid, %c0 : i32
    llvm.intr.assume %cond : i1
    gpu.barrier
    tt.return loc(#loc14)
  } loc(#loc)
} loc(#loc)
#loc = loc("/u/x/01-vector-add.py":28:0)
#loc1 = loc(unknown)
#loc2 = loc("/u/x/01-vector-add.py":37:24)
#loc3 = loc("/u/x/01-vector-add.py":42:24)
#loc4 = loc("/u/x/01-vector-add.py":43:41)
#loc5 = loc("/u/x/01-vector-add.py":43:28)
#loc6 = loc("/u/x/01-vector-add.py":45:21)
#loc7 = loc("/u/x/01-vector-add.py":48:24)
#loc8 = loc("/u/x/01-vector-add.py":48:16)
#loc14 = loc("/u/x/01-vector-add.py":52:4)
