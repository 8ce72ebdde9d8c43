"""What the explorer runs off the UI thread and reports back as messages: the reads
(`loader`), a measurement (`measure`, `measure_run`) and a multi-rank run (`ranks`)."""
