"""A request's steps besides the speakers: parse the payload, the ASR step (no words over non-speech),
render the response."""
