"""Split loads: mlx-lm's tensor- and pipeline-parallel sharding rules, the estimate of
every rank (`plan`), the model a plan reads (`source`) and its text (`report`)."""
