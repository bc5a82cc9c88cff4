"""Which APIs a project uses and what that means on NPU, read-only: call sites found per file
(``collect``, ``context``), judged against the API status knowledge base and the status rules
(``judge``), precision and performance advice (``advice``), calls into the project's own CUDA
operators (``cuda_ops``), and library functions fed in with -api (``api_files``)."""
