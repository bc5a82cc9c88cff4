from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="mypkg",
    ext_modules=[CUDAExtension("mypkg._C", ["mypkg/csrc/deform.cpp", "mypkg/csrc/deform_cuda.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
