"""``tl.math``: the math functions under their ``triton.language.math`` names."""
from .functions import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2, rsqrt,  # noqa: F401
                        sin, sqrt, sqrt_rn, umulhi)
from .functions import maximum as max, minimum as min  # noqa: F401
