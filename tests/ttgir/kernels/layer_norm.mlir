module {
  tt.func public @layer_norm_sum(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<f32>, %n: i32 {tt.divisibility = 16 : i32}) {
    %zero = arith.constant dense<0.000000e+00> : tensor<1024xf32>
    %c0 = arith.constant 0 : i32
    %c1024 = arith.constant 1024 : i32
    %cols = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %nn = tt.splat %n : i32 -> tensor<1024xi32>
    %acc = scf.for %off = %c0 to %n step %c1024 iter_args(%a = %zero) -> (tensor<1024xf32>) : i32 {
      %o = tt.splat %off : i32 -> tensor<1024xi32>
      %c = arith.addi %o, %cols : tensor<1024xi32>
      %p = tt.addptr %base, %c : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
      %m = arith.cmpi slt, %c, %nn : tensor<1024xi32>
      %v = tt.load %p, %m, %zero : tensor<1024x!tt.ptr<f32>>
      %sq = arith.mulf %v, %v : tensor<1024xf32>
      %a2 = arith.addf %a, %sq : tensor<1024xf32>
      scf.yield %a2 : tensor<1024xf32>
    }
    %s = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%l: f32, %r: f32):
      %t = arith.addf %l, %r : f32
      tt.reduce.return %t : f32
    }) : (tensor<1024xf32>) -> f32
    tt.store %out, %s : !tt.ptr<f32>
    tt.return
  }
}
