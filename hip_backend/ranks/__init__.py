"""Multi-rank MLX runs: the parent side under `mlx.launch` (`launch`), the job every
rank reads (`job`), one rank's run (`rank`) and MLX's own hostfile, checked up front
(`hostfile`)."""
