"""GGUF models (llama.cpp's files): their headers read, local or from the Hub, never
their tensor data (docs/gguf.md)."""
