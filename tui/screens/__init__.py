"""The explorer's screens: the main explorer and the help overlay."""
