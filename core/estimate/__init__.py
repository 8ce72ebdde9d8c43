"""mlxcel's pre-load estimate, term by term (weights, KV cache, activation, headroom,
in-flight reserve, available memory), its total (`estimate`), the solvers over it, what
mlxcel derives from it (`downstream`, `prompt_cache`) and its banner and JSON (`report`)."""
