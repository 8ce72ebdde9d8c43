"""mlxcel's pre-load estimate, term by term (weights, KV cache, activation, headroom,
in-flight reserve, available memory), its total (`estimate`), what mlxcel derives from
it (`downstream`, `prompt_cache`) and its banner and JSON (`report`): mlxcel's port and
nothing else (vramscope's own figures are `core.answer`'s)."""
