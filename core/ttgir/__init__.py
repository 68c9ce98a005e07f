"""TTGIR: the ``ttg`` dialect, layout encodings and their arithmetic, TTGIR passes and analyses.

Importing this package registers the ``ttg`` dialect in every TTIR/TTGIR context.
"""
from . import dialect as _dialect  # noqa: F401  (registers the dialect)
from .dialect import TritonGPU, ensure_plugin_encodings, register_encodings
from .encodings import (BlockedEncodingAttr, DistributedEncoding, DotOperandEncodingAttr, SharedEncoding,
                        SharedMemorySpaceAttr, SliceEncodingAttr, SwizzledSharedEncodingAttr)
from .linear_encoding import LinearEncodingAttr
from .linear_layout import IndexTerm, LinearLayout
from .types import AsyncTokenType, MemDescType

__all__ = ["TritonGPU", "register_encodings", "ensure_plugin_encodings", "BlockedEncodingAttr",
           "SliceEncodingAttr", "DotOperandEncodingAttr", "SwizzledSharedEncodingAttr", "SharedMemorySpaceAttr",
           "LinearEncodingAttr", "DistributedEncoding", "SharedEncoding", "MemDescType", "AsyncTokenType", "LinearLayout", "IndexTerm"]
