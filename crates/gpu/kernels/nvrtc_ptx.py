#!/usr/bin/env python3
"""Compiles one .cu file to PTX with NVRTC (through ctypes), for machines without
nvcc: build-ptx.sh installs NVIDIA's NVRTC wheel from PyPI and calls this.

usage: nvrtc_ptx.py LIBNVRTC ARCH FILE.cu > FILE.ptx
"""
import ctypes
import sys


def main():
    lib = ctypes.CDLL(sys.argv[1])
    arch, path = sys.argv[2], sys.argv[3]
    src = open(path, "rb").read()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, path.encode(), 0, None, None) != 0:
        sys.exit("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"-default-device"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit(f"{path}: compilation failed:\n{log.value.decode()}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, ptx)
    sys.stdout.write(ptx.value.decode())


if __name__ == "__main__":
    main()
