module {
  tt.func public @softmax_kernel(%out: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %in: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %in_stride: i32 {tt.divisibility = 16 : i32}, %out_stride: i32 {tt.divisibility = 16 : i32}, %n_cols: i32) {
    %cst = arith.constant dense<0xFF800000> : tensor<1024xf32>
    %pid = tt.get_program_id x : i32
    %row_off = arith.muli %pid, %in_stride : i32
    %row_ptr = tt.addptr %in, %row_off : !tt.ptr<f32>, i32
    %cols = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    %p0 = tt.splat %row_ptr : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %p = tt.addptr %p0, %cols : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %n = tt.splat %n_cols : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %cols, %n : tensor<1024xi32>
    %x = tt.load %p, %mask, %cst : tensor<1024x!tt.ptr<f32>>
    %m = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %r = arith.maximumf %a, %b : f32
      tt.reduce.return %r : f32
    }) : (tensor<1024xf32>) -> f32
    %ms = tt.splat %m : f32 -> tensor<1024xf32>
    %xm = arith.subf %x, %ms : tensor<1024xf32>
    %e = math.exp %xm : tensor<1024xf32>
    %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      tt.reduce.return %r : f32
    }) : (tensor<1024xf32>) -> f32
    %ss = tt.splat %s : f32 -> tensor<1024xf32>
    %y = arith.divf %e, %ss : tensor<1024xf32>
    %orow_off = arith.muli %pid, %out_stride : i32
    %orow = tt.addptr %out, %orow_off : !tt.ptr<f32>, i32
    %q0 = tt.splat %orow : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %q = tt.addptr %q0, %cols : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    tt.store %q, %y, %mask : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}
