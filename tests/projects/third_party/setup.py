from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="mylib",
    ext_modules=[CUDAExtension("mylib._ext", ["csrc/ops.cpp"])],
    cmdclass={"build_ext": BuildExtension},
)
