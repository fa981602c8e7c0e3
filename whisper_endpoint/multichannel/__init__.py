"""One speaker per channel: split and gate the channels, merge their transcripts into one response."""
