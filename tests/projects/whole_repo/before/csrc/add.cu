#include <cuda_runtime.h>
__global__ void add(float* x) { x[threadIdx.x] += 1; }
