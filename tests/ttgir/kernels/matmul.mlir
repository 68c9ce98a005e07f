module {
  tt.func public @matmul_kernel(%a: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %c: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %sam: i32 {tt.divisibility = 16 : i32}, %sbk: i32 {tt.divisibility = 16 : i32}, %scm: i32 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %acc0 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %k32 = arith.constant dense<32> : tensor<64x32xi32>
    %om = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %on = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ok = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %am0 = tt.expand_dims %om {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %samv = tt.splat %sam : i32 -> tensor<64x1xi32>
    %am1 = arith.muli %am0, %samv : tensor<64x1xi32>
    %am = tt.broadcast %am1 : tensor<64x1xi32> -> tensor<64x32xi32>
    %ak0 = tt.expand_dims %ok {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %ak = tt.broadcast %ak0 : tensor<1x32xi32> -> tensor<64x32xi32>
    %aoff = arith.addi %am, %ak : tensor<64x32xi32>
    %ap0 = tt.splat %a : !tt.ptr<f16> -> tensor<64x32x!tt.ptr<f16>>
    %ap = tt.addptr %ap0, %aoff : tensor<64x32x!tt.ptr<f16>>, tensor<64x32xi32>
    %bk0 = tt.expand_dims %ok {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %sbkv = tt.splat %sbk : i32 -> tensor<32x1xi32>
    %bk1 = arith.muli %bk0, %sbkv : tensor<32x1xi32>
    %bk = tt.broadcast %bk1 : tensor<32x1xi32> -> tensor<32x64xi32>
    %bn0 = tt.expand_dims %on {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %bn = tt.broadcast %bn0 : tensor<1x64xi32> -> tensor<32x64xi32>
    %boff = arith.addi %bk, %bn : tensor<32x64xi32>
    %bp0 = tt.splat %b : !tt.ptr<f16> -> tensor<32x64x!tt.ptr<f16>>
    %bp = tt.addptr %bp0, %boff : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    %bstep0 = arith.muli %sbk, %c32 : i32
    %bstep = tt.splat %bstep0 : i32 -> tensor<32x64xi32>
    %r:3 = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %acc0, %pa = %ap, %pb = %bp) -> (tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>)  : i32 {
      %av = tt.load %pa : tensor<64x32x!tt.ptr<f16>>
      %bv = tt.load %pb : tensor<32x64x!tt.ptr<f16>>
      %d = tt.dot %av, %bv, %acc : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
      %pa2 = tt.addptr %pa, %k32 : tensor<64x32x!tt.ptr<f16>>, tensor<64x32xi32>
      %pb2 = tt.addptr %pb, %bstep : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
      scf.yield %d, %pa2, %pb2 : tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>
    }
    %out = arith.truncf %r#0 : tensor<64x64xf32> to tensor<64x64xf16>
    %cm0 = tt.expand_dims %om {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %scmv = tt.splat %scm : i32 -> tensor<64x1xi32>
    %cm1 = arith.muli %cm0, %scmv : tensor<64x1xi32>
    %cm = tt.broadcast %cm1 : tensor<64x1xi32> -> tensor<64x64xi32>
    %cn0 = tt.expand_dims %on {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %cn = tt.broadcast %cn0 : tensor<1x64xi32> -> tensor<64x64xi32>
    %coff = arith.addi %cm, %cn : tensor<64x64xi32>
    %cp0 = tt.splat %c : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>>
    %cp = tt.addptr %cp0, %coff : tensor<64x64x!tt.ptr<f16>>, tensor<64x64xi32>
    tt.store %cp, %out : tensor<64x64x!tt.ptr<f16>>
    tt.return
  }
}
