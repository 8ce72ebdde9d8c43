"""What vramscope can see and how a name resolves: built-in profiles, the Hugging Face
cache, model folders, the on-disk cache of their entries (`resolve` is the way in)."""
