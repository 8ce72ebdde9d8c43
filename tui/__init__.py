"""vramscope's terminal UI and command-line entry point.

Importing this package is cheap: the Textual app is imported only when a
command needs it, and torch never is (measurements run in `hip_backend`).
"""
