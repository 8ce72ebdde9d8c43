"""Pure text for the terminal: bars, the context chart, measured-peak text and the
history table (Rich text, no widgets)."""
