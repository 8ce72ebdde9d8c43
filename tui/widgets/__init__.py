"""The explorer's widgets, one per module."""
