"""The model a measuring engine loads, shared by both engines: the architecture read from
`config.json`, mlx-lm's tensor layout, the checked manifest of weight files, random
weights of the real shapes, and the bench workload's constants and prompt (`bench`).
No torch or mlx at import."""
