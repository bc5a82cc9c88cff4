from setuptools import setup
from torch.utils import cpp_extension
from torch.utils.cpp_extension import BuildExtension, CUDAExtension as CE

SOURCES = ["csrc/ops.cpp", "csrc/kernels.cu"]

setup(
    name="my_pkg",
    ext_modules=[
        CE("my_ext", SOURCES),
        cpp_extension.CppExtension(name="my_pkg._cpu", sources=["csrc/cpu_only.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
