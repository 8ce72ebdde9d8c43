"""The explorer on a GGUF model (#40): llama.cpp's question from the controls, its answer
kept per question, and the words the screen shows for it (pure: no Textual)."""
