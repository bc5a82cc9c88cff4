from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="my_ext",
    ext_modules=[CUDAExtension("my_ext", ["csrc/ops.cpp", "csrc/kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
