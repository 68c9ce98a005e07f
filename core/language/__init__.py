"""``tritium.language``: the kernel language, with ``triton.language``'s names."""
from . import math  # noqa: F401
from .core import (PropagateNan, builtin, condition, const, constexpr, is_builtin, range, static_range,  # noqa: F401
                   tensor)
from .dtypes import (bfloat16, block_type, dtype, float8e4b8, float8e4b15, float8e4nv, float8e5,  # noqa: F401
                     float8e5b16, float16, float32, float64, function_type, int1, int8, int16, int32, int64,
                     pi32_t, pointer_type, uint8, uint16, uint32, uint64, void)
from .dtypes import str_to_ty  # noqa: F401,E402  (signature string -> type, as Triton's tl.str_to_ty)
from .core import must_use_result  # noqa: F401,E402
from .functions import *  # noqa: F401,F403
from .functions import (abs, advance, assume, arange, argmax, argmin, associative_scan, atomic_add, atomic_and,  # noqa: F401
                        atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor, broadcast,
                        broadcast_to, cast, cat, cdiv, ceil, clamp, cos, cumprod, cumsum, debug_barrier,
                        device_assert, device_print, div_rn, dot, dot_scaled, erf, exp, exp2, expand_dims, fdiv, floor,
                        fma, full, full_like, inline_asm_elementwise, interleave, join, load, log, log2,
                        logical_and, logical_or, make_block_ptr, max, max_constancy, max_contiguous, maximum,
                        min, minimum, multiple_of, next_power_of_2, num_programs, permute, program_id,
                        ravel, reduce, reshape, rsqrt, sigmoid, sin, softmax, split, sqrt, sqrt_rn,
                        static_assert, static_print, store, sum, trans, umulhi, view, where, xor_sum,
                        zeros, zeros_like)

float8e4b15x4 = float8e4b15
bool_ = int1
from . import random  # noqa: E402,F401
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x,  # noqa: E402,F401
                     randn, randn4x, uint_to_uniform_float)
from . import standard  # noqa: E402,F401
from .standard import add, flip, gather, histogram, mul, reduce_or, sort, sub, swizzle2d, topk  # noqa: E402,F401
from . import extra  # noqa: E402,F401
from .core import extern, extern_elementwise  # noqa: E402,F401
from .core import constexpr_type, tuple, tuple_type  # noqa: E402,F401
from .tensor_descriptor import (load_tensor_descriptor, make_tensor_descriptor,  # noqa: E402,F401
                                store_tensor_descriptor, tensor_descriptor, tensor_descriptor_base)
