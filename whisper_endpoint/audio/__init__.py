"""Audio in: any FFmpeg format or a sample array decoded and resampled to 16 kHz mono (or kept per channel)."""
