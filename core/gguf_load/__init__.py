"""llama.cpp's load of a GGUF answered for the surfaces (#40): one question (`answer`),
`inspect`'s lines and JSON (`report`), `fit`'s rows (`fit`, `hub_fit`) and `vramscope
run`'s llama.cpp log lines beside the load (`run`); the load itself is
`core.load.llama_cpp`."""
