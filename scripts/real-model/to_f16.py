"""Writes a copy of a GGUF model with its quantized weights dequantized to F16.

Usage: to_f16.py SRC DST. Every metadata field is copied (the file type becomes MOSTLY_F16);
F32 and F16 tensors are copied as they are. See scripts/real-model.sh for why CI needs it.
"""
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter

src, dst = sys.argv[1], sys.argv[2]
reader = GGUFReader(src)
writer = GGUFWriter(dst, reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
for field in reader.fields.values():
    # The architecture and the GGUF.* fields are written by GGUFWriter itself.
    if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
        continue
    kind = field.types[0]
    sub_kind = field.types[-1] if kind == GGUFValueType.ARRAY else None
    value = field.contents()
    if field.name == gguf.Keys.General.FILE_TYPE:
        value = int(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_key_value(field.name, value, kind, sub_type=sub_kind)
for tensor in reader.tensors:
    if tensor.tensor_type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        writer.add_tensor(tensor.name, np.asarray(tensor.data), raw_dtype=tensor.tensor_type)
    else:
        weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        writer.add_tensor(tensor.name, weights.astype(np.float16))
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
