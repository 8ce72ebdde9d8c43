"""The `mlx` engine: mlx-lm loads the model in the measuring child and MLX counts its
peak (`child` runs the job, `loader` loads, `workload` is mlxcel's bench on it)."""
