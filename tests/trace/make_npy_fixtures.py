#!/usr/bin/python3
"""Writes .npy files with NumPy for the C++ round-trip test.

For every dtype (float32, float16) and header version (1.0, 2.0, 3.0) it writes
NAME.npy with numpy.lib.format.write_array and NAME.expected, the raw
little-endian float32 bytes NumPy itself gets when converting the array to
float32, which the C++ reader must reproduce bit for bit.
"""
import os
import sys

import numpy as np
from numpy.lib import format as npformat


def values(dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1000).astype(np.float32) * np.float32(0.01)
    # 1e24: the largest magnitude a trace may hold (sim/trace/npy.hpp).
    special = [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 1e24, 1e-8, 6e-8, 5.9604645e-08,
               6.1035156e-05, 65504.0, -65504.0, 0.1, 1.0 / 3.0]
    if dtype == np.float16:
        special = [v for v in special if abs(v) <= 65504.0]
    x[:len(special)] = special
    return x.astype(dtype)


def main(out):
    os.makedirs(out, exist_ok=True)
    for dtype in (np.float32, np.float16):
        for version in ((1, 0), (2, 0), (3, 0)):
            name = f"{np.dtype(dtype).name}_v{version[0]}"
            array = values(dtype)
            shape = (1000,) if version != (2, 0) else (10, 100)
            array = array.reshape(shape)
            with open(os.path.join(out, name + ".npy"), "wb") as stream:
                npformat.write_array(stream, array, version=version)
            with open(os.path.join(out, name + ".expected"), "wb") as stream:
                stream.write(array.astype("<f4").tobytes())
            assert np.array_equal(np.load(os.path.join(out, name + ".npy")), array)
    # Files the reader must reject.
    np.save(os.path.join(out, "float64.npy"), np.zeros(4, dtype=np.float64))
    np.save(os.path.join(out, "int32.npy"), np.zeros(4, dtype=np.int32))
    np.save(os.path.join(out, "bigendian.npy"), np.zeros(4, dtype=">f4"))
    np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(np.zeros((3, 4), np.float32)))
    np.save(os.path.join(out, "nan.npy"), np.array([1.0, np.nan, 2.0], dtype=np.float32))
    np.save(os.path.join(out, "inf16.npy"), np.array([1.0, 2.0, np.inf], dtype=np.float16))
    np.save(os.path.join(out, "huge.npy"), np.array([1.0, -3e38], dtype=np.float32))
    with open(os.path.join(out, "float32_v1.npy"), "rb") as stream:
        whole = stream.read()
    with open(os.path.join(out, "truncated.npy"), "wb") as stream:
        stream.write(whole[:-3])
    with open(os.path.join(out, "truncated_header.npy"), "wb") as stream:
        stream.write(whole[:40])
    with open(os.path.join(out, "trailing.npy"), "wb") as stream:
        stream.write(whole + b"\0\0\0\0")
    with open(os.path.join(out, "not_npy.npy"), "wb") as stream:
        stream.write(b"this is not an npy file at all")
    open(os.path.join(out, "empty.npy"), "wb").close()


if __name__ == "__main__":
    main(sys.argv[1])
