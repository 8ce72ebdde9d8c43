"""The `torch` engine: vramscope's decoder in torch (HIP on ROCm, CUDA, the CPU) under
MLX-ROCm's bounded in-flight queue, with MLX's attention and quantized kernels for the
measured backend. torch is imported inside functions, in the measuring child."""
