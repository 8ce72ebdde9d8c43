"""vramscope's own load: the memory each engine really holds, one module per engine."""
