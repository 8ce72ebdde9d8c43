"""The model a measuring engine loads, shared by both engines: the architecture read from
`config.json`, mlx-lm's tensor layout, the checked manifest of weight files, and random
weights of the real shapes. No torch or mlx at import."""
