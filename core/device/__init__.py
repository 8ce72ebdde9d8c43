"""Reading the device the estimate runs on."""
